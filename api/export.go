package api

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
)

// Audit exports are written to a temporary file (the spool) inside their
// database snapshot, and sent only after the transaction has ended: a
// client that reads slowly, or not at all, then holds a file and a
// goroutine, never a database connection that issuing needs. How many run
// at once is bounded over all sellers and per seller, and a client that
// stops reading is cut off after a bounded stall.

// Defaults of the export limits in Config.
const (
	DefaultMaxExports          = 4
	DefaultMaxExportsPerSeller = 2
	DefaultExportStallTimeout  = 30 * time.Second
)

// exportChunk is how much of a spooled export is written per deadline: a
// client must take at least this much per stall timeout (1 KiB/s at 30 s).
const exportChunk = 32 << 10

var errTooManyExports = apperr.New(apperr.TooMany, "too_many_exports", "too many audit exports are in progress; retry in a few seconds")

// spool is an export being written to a temporary file that is removed
// from the directory at once, so nothing is left behind by a crash.
type spool struct {
	f *os.File
	w *bufio.Writer
}

// newSpool creates an unnamed temporary file in dir ("" = os.TempDir()).
func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, "invoiced-export-*")
	if err != nil {
		return nil, fmt.Errorf("api: export spool: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("api: export spool: %w", err)
	}
	return &spool{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

func (s *spool) Write(b []byte) (int, error) { return s.w.Write(b) }

// rewind flushes what was written and returns its size, ready to be read
// from the start.
func (s *spool) rewind() (int64, error) {
	if err := s.w.Flush(); err != nil {
		return 0, fmt.Errorf("api: export spool: %w", err)
	}
	n, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, fmt.Errorf("api: export spool: %w", err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("api: export spool: %w", err)
	}
	return n, nil
}

func (s *spool) Close() error { return s.f.Close() }

// sendStalling copies r to w a chunk at a time, giving each chunk at most
// stall to be written, and none past ctx's deadline: a client that stops
// reading makes the write fail with a timeout. It returns the first read
// or write error, or ctx's error.
func sendStalling(ctx context.Context, w http.ResponseWriter, r io.Reader, stall time.Duration) error {
	rc := http.NewResponseController(w)
	buf := make([]byte, exportChunk)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			deadline := time.Now().Add(stall)
			if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
				deadline = d
			}
			if err := rc.SetWriteDeadline(deadline); err != nil {
				return err
			}
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			if err := rc.Flush(); err != nil {
				return err
			}
		}
		switch rerr {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			return nil
		default:
			return rerr
		}
	}
}
