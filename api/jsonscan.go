package api

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/invoiced/invoiced/internal/apperr"
)

// This file holds the jsonScanner: the byte-level check of a request
// body's shape (repeated or escaped keys, nesting, array lengths) before
// encoding/json decodes it.

// scanFrame is an object or array a jsonScanner is inside of.
type scanFrame struct {
	object    bool
	expectKey bool            // object: the next string is a key
	elems     int             // array: values begun (commas + 1)
	max       int             // array: the most elements allowed
	key       [2]int          // array: where its key lies in the body (empty: none)
	nkeys     int             // object: keys seen
	keys      [maxKeys][2]int // object: where each key's bytes lie in the body
}

// arrayLimits says how many elements a body's arrays may hold: an array
// that is the value of a key in byKey at most byKey[key], any other at
// most other.
type arrayLimits struct {
	byKey map[string]int
	other int
}

// of returns the most elements of an array under key ("" for an array
// that is not an object member).
func (l arrayLimits) of(key []byte) int {
	if n, ok := l.byKey[string(key)]; ok {
		return n
	}
	return l.other
}

// arrayTooLong is the error of an array past its limit: errors.Is it
// errTooManyElements.
type arrayTooLong struct {
	key string // the array's key, "" when it is not an object member
	max int
}

func (e *arrayTooLong) Error() string {
	return fmt.Sprintf("api: array %q holds more than %d elements", e.key, e.max)
}

// Is reports whether target is errTooManyElements.
func (e *arrayTooLong) Is(target error) bool { return target == errTooManyElements }

// jsonScanner reads a body byte by byte, without building anything, as
// it arrives (scan is called with everything read so far) or whole
// (scanJSON). It fails with errBadJSON for a key repeated in an object
// (compared case-insensitively, as encoding/json matches fields), a key
// written with escapes (which would let "\u0069tems" pass for "items") or
// an object of more than maxKeys keys; with errTooDeep past maxDepth; and
// with an arrayTooLong at the first element past its array's limit.
// Syntax and UTF-8 are left to the caller: on malformed input the scan
// may pass or count oddly, and the decoder then refuses the body.
type jsonScanner struct {
	limits  arrayLimits
	stack   [maxDepth]scanFrame
	depth   int
	pos     int  // the next byte to scan
	str     int  // inside a string: where its bytes begin; -1 outside
	escaped bool // the string has an escape
	escNext bool // the next byte of the string is escaped
	lastKey [2]int
}

// newJSONScanner returns a scanner of a body whose arrays limits bounds.
func newJSONScanner(limits arrayLimits) *jsonScanner {
	return &jsonScanner{limits: limits, str: -1}
}

// scan scans body[sc.pos:], body being every byte of the request read so
// far (the bytes before pos as in earlier calls), and returns the first
// failure described at jsonScanner.
func (sc *jsonScanner) scan(body []byte) error {
	stack := &sc.stack
	begin := func() { // a value begins at this byte
		if sc.depth > 0 && !stack[sc.depth-1].object && stack[sc.depth-1].elems == 0 {
			stack[sc.depth-1].elems = 1
		}
	}
	for i := sc.pos; i < len(body); i++ {
		if sc.str >= 0 {
			j := i
			for ; j < len(body); j++ {
				if sc.escNext {
					sc.escNext = false
					continue
				}
				if body[j] == '\\' {
					sc.escaped, sc.escNext = true, true
					continue
				}
				if body[j] == '"' {
					break
				}
			}
			if j == len(body) {
				break // the string goes on in bytes not read yet
			}
			if sc.depth > 0 && stack[sc.depth-1].object && stack[sc.depth-1].expectKey {
				if err := addKey(&stack[sc.depth-1], body, sc.str, j, sc.escaped); err != nil {
					return err
				}
				sc.lastKey = [2]int{sc.str, j}
			} else {
				begin()
			}
			sc.str, i = -1, j
			continue
		}
		switch c := body[i]; c {
		case ' ', '\t', '\n', '\r', ':':
		case '"':
			sc.str, sc.escaped, sc.escNext = i+1, false, false
		case '{', '[':
			begin()
			if sc.depth == maxDepth {
				return errTooDeep
			}
			f := scanFrame{object: c == '{', expectKey: c == '{'}
			if !f.object {
				if sc.depth > 0 && stack[sc.depth-1].object {
					f.key = sc.lastKey
				}
				f.max = sc.limits.of(body[f.key[0]:f.key[1]])
			}
			stack[sc.depth] = f
			sc.depth++
		case '}', ']':
			if sc.depth > 0 {
				sc.depth--
			}
		case ',':
			if sc.depth == 0 {
				continue
			}
			top := &stack[sc.depth-1]
			if top.object {
				top.expectKey = true
			} else if top.elems++; top.elems > top.max {
				return &arrayTooLong{key: string(body[top.key[0]:top.key[1]]), max: top.max}
			}
		default:
			begin()
		}
	}
	sc.pos = len(body)
	return nil
}

// scanJSON checks that body is valid UTF-8 (else errBadJSON) and scans it
// whole with a jsonScanner whose arrays may hold at most maxElems
// elements each.
//
// It scans bytes by hand because a json.Decoder.Token loop cost several
// times the decoding itself (docs/bench.md, "Why some code is written by
// hand").
func scanJSON(body []byte, maxElems int) error {
	if !utf8.Valid(body) {
		return apperr.Errorf(errBadJSON, "the request body is not valid UTF-8")
	}
	return newJSONScanner(arrayLimits{other: maxElems}).scan(body)
}

// addKey records the key body[from:to] in the object f, failing on a key
// already there, an escaped key, or one key too many.
func addKey(f *scanFrame, body []byte, from, to int, escaped bool) error {
	key := body[from:to]
	if escaped {
		return apperr.Errorf(errBadJSON, "the request body has a key written with escapes (%q); write keys plainly", clip(string(key)))
	}
	for _, k := range f.keys[:f.nkeys] {
		if bytes.EqualFold(body[k[0]:k[1]], key) {
			return apperr.Errorf(errBadJSON, "the request body repeats the key %q in one object", clip(string(key)))
		}
	}
	if f.nkeys == maxKeys {
		return apperr.Errorf(errBadJSON, "a JSON object in the request body has more than %d keys", maxKeys)
	}
	f.keys[f.nkeys] = [2]int{from, to}
	f.nkeys++
	f.expectKey = false
	return nil
}
