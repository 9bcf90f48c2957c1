package offline

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// The journal is one append-only file of records, each framed as
//
//	uint32 little-endian length of the payload (1 .. maxRecord)
//	uint32 little-endian CRC-32C of the payload
//	payload (JSON)
//
// A record is durable once append returns: it is written and the file is
// fsynced before the caller learns anything (an invoice number only comes
// back after that). A power cut can therefore leave at most one record
// incomplete, the last, and only one that no caller was ever told about;
// open discards exactly such a tail: a header cut short, a payload cut
// short, a last record whose payload ends in a zero byte (its last blocks
// allocated but never written; a JSON payload ends in '}'), or zeros to
// the end. Anything else that fails its check is damage, and open refuses
// the file (ErrCorrupt) rather than guess: a terminal never renumbers from
// a journal it cannot read. Damage can look like a tear: a length whose
// bits flipped points past the end of the file, as a payload cut short
// does; but then the payload's checksum matches a shorter length, the
// true one (a torn payload matches none), and open refuses the journal. A
// flipped bit in the last record's payload or checksum leaves its last
// byte '}' (no single bit flip makes it zero), so it is damage too.

const (
	headerLen = 8
	maxRecord = 4 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is returned by Open when the journal fails its checks
// somewhere other than a torn last record.
var ErrCorrupt = errors.New("offline: journal is corrupt")

type journal struct {
	f    *os.File
	size int64
}

// openJournal opens or creates the journal at path and returns it with
// its intact records, after truncating a torn tail (see above).
func openJournal(path string) (*journal, [][]byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	records, good, err := scanRecords(data)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if good < int64(len(data)) {
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, nil, err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, nil, err
		}
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, err
	}
	if len(data) == 0 {
		// A new file: make its directory entry durable too.
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, nil, err
		}
	}
	return &journal{f: f, size: good}, records, nil
}

// scanRecords returns the intact records of data and the offset where
// they end; ErrCorrupt when a record other than a torn tail fails.
func scanRecords(data []byte) ([][]byte, int64, error) {
	var out [][]byte
	off := 0
	for off < len(data) {
		rest := data[off:]
		if allZero(rest) || len(rest) < headerLen {
			break // torn tail
		}
		n := int(binary.LittleEndian.Uint32(rest[0:4]))
		sum := binary.LittleEndian.Uint32(rest[4:8])
		if n > len(rest)-headerLen {
			if end := wholeAt(rest[headerLen:], sum); end > 0 {
				return nil, 0, fmt.Errorf("%w: record at offset %d has length %d, past the end of the file, but its payload is whole at length %d: the length is damaged", ErrCorrupt, off, n, end)
			}
			break // the payload was cut short
		}
		if n == 0 || n > maxRecord {
			return nil, 0, fmt.Errorf("%w: record at offset %d has length %d", ErrCorrupt, off, n)
		}
		payload := rest[headerLen : headerLen+n]
		if crc32.Checksum(payload, crcTable) != sum {
			if headerLen+n == len(rest) && payload[n-1] == 0 {
				break // the last record, its end never written
			}
			return nil, 0, fmt.Errorf("%w: record at offset %d fails its checksum", ErrCorrupt, off)
		}
		out = append(out, payload)
		off += headerLen + n
	}
	return out, int64(off), nil
}

// wholeAt returns the length (1 .. maxRecord) at which a prefix of b has
// checksum sum, the first such; 0 when none does.
func wholeAt(b []byte, sum uint32) int {
	crc := uint32(0)
	for i := range min(len(b), maxRecord) {
		crc = crc32.Update(crc, crcTable, b[i:i+1])
		if crc == sum {
			return i + 1
		}
	}
	return 0
}

func allZero(b []byte) bool {
	return len(bytes.Trim(b, "\x00")) == 0
}

// append writes payload as one record and fsyncs the file. After an
// error the journal must not be used: the file may hold part of the
// record, which the next open discards.
func (j *journal) append(payload []byte) error {
	if len(payload) == 0 || len(payload) > maxRecord {
		return fmt.Errorf("offline: record of %d bytes", len(payload))
	}
	buf := make([]byte, headerLen+len(payload))
	binary.LittleEndian.PutUint32(buf[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[4:8], crc32.Checksum(payload, crcTable))
	copy(buf[headerLen:], payload)
	if _, err := j.f.Write(buf); err != nil {
		return err
	}
	if err := j.f.Sync(); err != nil {
		return err
	}
	j.size += int64(len(buf))
	return nil
}

func (j *journal) close() error { return j.f.Close() }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
