package offline_test

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/gst"
)

// TestDamagedJournalIsRefused: one bit flipped in a journal record's
// length (the first record's, or the last's) or in the last record's
// payload is damage, not a record torn by a power cut: Open refuses the
// journal (ErrCorrupt) and leaves the file as it was, so the till never
// numbers a printed serial again.
func TestDamagedJournalIsRefused(t *testing.T) {
	t.Parallel()
	dir, clk, at, whole := journalOf(t, 5)
	last := int(at[4]) // the last invoice's record
	for _, c := range []struct {
		name string
		at   int // the byte whose bit 4 is flipped
	}{
		{"the first record's length", 2},
		{"the last record's length", last + 1},
		{"the last record's payload", last + 8 + int(binary.LittleEndian.Uint32(whole[last:]))/2},
		{"the last record's checksum", last + 5},
	} {
		damaged := append([]byte(nil), whole...)
		damaged[c.at] ^= 1 << 4
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
		if err := os.WriteFile(p, damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		term, err := offline.Open(p, clk.now)
		fi, _ := os.Stat(p)
		if err == nil {
			r, ierr := term.Issue(sale(0))
			term.Close()
			t.Errorf("%s damaged: Open %v (file %d → %d bytes), then the till numbered %s, %v; want ErrCorrupt", c.name, err, len(whole), fi.Size(), r.Number, ierr)
			continue
		}
		if !errors.Is(err, offline.ErrCorrupt) || fi.Size() != int64(len(whole)) {
			t.Errorf("%s damaged: Open %v, file %d → %d bytes; want ErrCorrupt and the file untouched", c.name, err, len(whole), fi.Size())
		}
	}
}

// TestTornTailIsDiscarded: a record cut anywhere (header or payload), or
// zeros after the last record, is discarded on open and the next invoice
// takes the serial after the last acknowledged one; a damaged record
// followed by others is corruption and the journal is refused.
func TestTornTailIsDiscarded(t *testing.T) {
	t.Parallel()
	dir, clk, at, whole := journalOf(t, 3)
	sizes := at[1:] // the file's size after each invoice
	for _, cut := range []int64{sizes[1] + 3, sizes[1] + 9, sizes[2] - 1} {
		p := filepath.Join(dir, "cut")
		if err := os.WriteFile(p, whole[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		term, err := offline.Open(p, clk.now)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		r, err := term.Issue(sale(0))
		term.Close()
		if err != nil || r.Serial != 3 {
			t.Fatalf("cut at %d: next serial %d, %v; want 3", cut, r.Serial, err)
		}
	}
	p := filepath.Join(dir, "zeros")
	if err := os.WriteFile(p, append(append([]byte(nil), whole...), make([]byte, 4096)...), 0o600); err != nil {
		t.Fatal(err)
	}
	if term, err := offline.Open(p, clk.now); err != nil {
		t.Fatalf("zeros after the end: %v", err)
	} else if r, err := term.Issue(sale(0)); err != nil || r.Serial != 4 {
		t.Fatalf("zeros after the end: serial %d, %v", r.Serial, err)
	}
	damaged := append([]byte(nil), whole...)
	damaged[sizes[0]+12] ^= 0xff // inside the first invoice, with two after it
	p = filepath.Join(dir, "damaged")
	if err := os.WriteFile(p, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := offline.Open(p, clk.now); !errors.Is(err, offline.ErrCorrupt) {
		t.Fatalf("damaged journal: %v", err)
	}
}

// journalOf writes a journal of testLease() and n sales in a new directory and
// returns the directory, the till's clock, the file's size before the
// first sale and after each (n+1 offsets: where each sale's record
// starts, then the end), and the whole file.
func journalOf(t *testing.T, n int) (string, *clock, []int64, []byte) {
	t.Helper()
	dir := t.TempDir()
	clk := &clock{time.Date(2026, 5, 1, 10, 0, 0, 0, gst.IST)}
	path := filepath.Join(dir, "j")
	term, err := offline.Create(path, testLease(), clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	at := []int64{size()}
	for i := range n {
		if _, err := term.Issue(sale(i)); err != nil {
			t.Fatal(err)
		}
		at = append(at, size())
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return dir, clk, at, whole
}
