package migrations

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

// TestMigrationsMatchTheManifest: every migration file is exactly the text
// recorded in manifest.sha256. A migration that was applied somewhere must
// never change (a database migrated with the earlier text keeps it); a
// new migration is added to the manifest in the same commit.
func TestMigrationsMatchTheManifest(t *testing.T) {
	t.Parallel()
	if err := checkManifest(files, manifest); err != nil {
		t.Fatal(err)
	}
}

// TestManifestCatchesAnEditedMigration: the first text of 00003, applied
// by some databases before the file was edited, no longer matches the
// manifest; a file missing from it, or a manifest line without its file,
// fail too.
func TestManifestCatchesAnEditedMigration(t *testing.T) {
	t.Parallel()
	first, err := os.ReadFile("testdata/00003_invoice_counter_fk.first-text.sql")
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{}
	entries, err := files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := files.ReadFile(e.Name())
		fsys[e.Name()] = &fstest.MapFile{Data: b}
	}
	edited := fstest.MapFS{}
	for k, v := range fsys {
		edited[k] = v
	}
	edited["00003_invoice_counter_fk.sql"] = &fstest.MapFile{Data: first}
	if err := checkManifest(edited, manifest); err == nil || !strings.Contains(err.Error(), "00003_invoice_counter_fk.sql") || !strings.Contains(err.Error(), "add a new migration") {
		t.Fatalf("00003's first text against the manifest: %v", err)
	}
	added := fstest.MapFS{"99999_new.sql": &fstest.MapFile{Data: []byte("-- +goose Up\nSELECT 1;\n")}}
	for k, v := range fsys {
		added[k] = v
	}
	if err := checkManifest(added, manifest); err == nil || !strings.Contains(err.Error(), "sha256sum 99999_new.sql >> manifest.sha256") {
		t.Fatalf("a migration missing from the manifest: %v", err)
	}
	removed := fstest.MapFS{}
	for k, v := range fsys {
		if k != "00001_init.sql" {
			removed[k] = v
		}
	}
	if err := checkManifest(removed, manifest); err == nil || !strings.Contains(err.Error(), "00001_init.sql") {
		t.Fatalf("a manifest line without its migration: %v", err)
	}
}
