package jsonfast

import "bytes"

// Member returns the value of the member name of the JSON object obj
// (its bytes, white space trimmed), matching the key as encoding/json
// matches a field (bytes.EqualFold), and whether there is one. obj must be
// one syntactically valid JSON object whose keys Scan has checked (no
// escapes, none repeated): the batch envelope's items are, after its
// decodeStrict. It reads obj once, building nothing, because json.Unmarshal
// into a one-field struct would validate and decode the whole item again
// (its cost: docs/bench.md, "Why some code is written by hand").
func Member(obj []byte, name string) ([]byte, bool) {
	i := SkipSpace(obj, 1) // past '{'
	for i < len(obj) && obj[i] == '"' {
		end := skipString(obj, i)
		key := obj[i+1 : end-1]
		i = SkipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		start := SkipSpace(obj, i+1)
		end = skipValue(obj, start)
		if bytes.EqualFold(key, []byte(name)) {
			return obj[start:end], true
		}
		i = SkipSpace(obj, end)
		if i < len(obj) && obj[i] == ',' {
			i = SkipSpace(obj, i+1)
		}
	}
	return nil, false
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string that begins at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the value that begins at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}
