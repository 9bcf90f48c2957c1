// Package docblocks reads a section of a Markdown page under docs/ and its
// fenced code blocks, for the tests that check or run what a page shows
// (a worked example's record and hash, the commands a reader pastes).
package docblocks

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Section returns the text of the section of the Markdown file at path
// headed by the line heading ("## Worked example"), up to the next heading
// of level two. It fails t when the file cannot be read or has no such
// section.
func Section(t testing.TB, path, heading string) string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no %q section", path, heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// fence matches a fenced code block: its info string and its contents.
var fence = regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```")

// Blocks returns the contents of the fenced code blocks of text whose info
// string is lang ("sh"; "" for every block), in order, without the fences.
func Blocks(text, lang string) []string {
	var out []string
	for _, m := range fence.FindAllStringSubmatch(text, -1) {
		if lang == "" || m[1] == lang {
			out = append(out, m[2])
		}
	}
	return out
}
