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
	dir := t.TempDir()
	clk := &clock{time.Date(2026, 5, 1, 10, 0, 0, 0, gst.IST)}
	path := filepath.Join(dir, "j")
	term, err := offline.Create(path, lease(), clk.now)
	if err != nil {
		t.Fatal(err)
	}
	var starts []int
	for i := range 5 {
		fi, _ := os.Stat(path)
		starts = append(starts, int(fi.Size()))
		if _, err := term.Issue(sale(i)); err != nil {
			t.Fatal(err)
		}
	}
	term.Close()
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	last := starts[len(starts)-1]
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
