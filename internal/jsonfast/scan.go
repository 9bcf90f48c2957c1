package jsonfast

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// This file holds the Scanner: the byte-level check of a request body's
// shape (repeated or escaped keys, nesting, array lengths) before
// encoding/json decodes it.

// MaxDepth bounds the nesting of objects and arrays a Scanner accepts;
// MaxKeys the keys of one object.
const (
	MaxDepth = 8
	MaxKeys  = 16
)

// Errors of a scan: ErrTooManyElements (an *ArrayTooLong is it),
// ErrTooDeep past MaxDepth, and a *ShapeError for a key.
var (
	ErrTooManyElements = errors.New("jsonfast: too many array elements")
	ErrTooDeep         = errors.New("jsonfast: nested deeper than allowed")
)

// Problem names what a ShapeError found.
type Problem int

// The problems with a key a Scanner refuses.
const (
	NotUTF8     Problem = iota + 1 // the body is not valid UTF-8 (Scan)
	EscapedKey                     // a key written with escapes, which would let "\u0069tems" pass for "items"
	RepeatedKey                    // a key twice in one object, compared case-insensitively as encoding/json matches fields
	TooManyKeys                    // an object with more than MaxKeys keys
)

// ShapeError is a body a Scanner refuses for Problem, at Key (the key's
// text, as written).
type ShapeError struct {
	Problem Problem
	Key     string
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("jsonfast: problem %d at key %q", e.Problem, e.Key)
}

// scanFrame is an object or array a Scanner is inside of.
type scanFrame struct {
	object    bool
	expectKey bool            // object: the next string is a key
	elems     int             // array: values begun (commas + 1)
	max       int             // array: the most elements allowed
	key       [2]int          // array: where its key lies in the body (empty: none)
	nkeys     int             // object: keys seen
	keys      [MaxKeys][2]int // object: where each key's bytes lie in the body
}

// Limits says how many elements a body's arrays may hold: an array
// that is the value of a key in byKey at most byKey[key], any other at
// most other.
type Limits struct {
	ByKey map[string]int
	Other int
}

// of returns the most elements of an array under key ("" for an array
// that is not an object member).
func (l Limits) of(key []byte) int {
	if n, ok := l.ByKey[string(key)]; ok {
		return n
	}
	return l.Other
}

// ArrayTooLong is the error of an array past its limit: errors.Is it
// ErrTooManyElements.
type ArrayTooLong struct {
	Key string // the array's key, "" when it is not an object member
	Max int
}

func (e *ArrayTooLong) Error() string {
	return fmt.Sprintf("jsonfast: array %q holds more than %d elements", e.Key, e.Max)
}

// Is reports whether target is ErrTooManyElements.
func (e *ArrayTooLong) Is(target error) bool { return target == ErrTooManyElements }

// Scanner reads a body byte by byte, without building anything, as
// it arrives (Scan is called with everything read so far) or whole
// (Scan). It fails with a ShapeError for a key repeated in an object
// (compared case-insensitively, as encoding/json matches fields), a key
// written with escapes (which would let "\u0069tems" pass for "items") or
// an object of more than MaxKeys keys; with ErrTooDeep past MaxDepth; and
// with an ArrayTooLong at the first element past its array's limit.
// Syntax and UTF-8 are left to the caller: on malformed input the scan
// may pass or count oddly, and the decoder then refuses the body.
type Scanner struct {
	limits  Limits
	stack   [MaxDepth]scanFrame
	depth   int
	pos     int  // the next byte to scan
	str     int  // inside a string: where its bytes begin; -1 outside
	escaped bool // the string has an escape
	escNext bool // the next byte of the string is escaped
	lastKey [2]int
}

// NewScanner returns a scanner of a body whose arrays limits bounds.
func NewScanner(limits Limits) *Scanner {
	return &Scanner{limits: limits, str: -1}
}

// Scan scans body[sc.pos:], body being every byte of the request read so
// far (the bytes before pos as in earlier calls), and returns the first
// failure described at Scanner.
func (sc *Scanner) Scan(body []byte) error {
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
			if sc.depth == MaxDepth {
				return ErrTooDeep
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
				return &ArrayTooLong{Key: string(body[top.key[0]:top.key[1]]), Max: top.max}
			}
		default:
			begin()
		}
	}
	sc.pos = len(body)
	return nil
}

// Scan checks that body is valid UTF-8 (else a ShapeError NotUTF8) and scans it
// whole with a Scanner whose arrays may hold at most maxElems
// elements each.
//
// It scans bytes by hand because a json.Decoder.Token loop cost several
// times the decoding itself (docs/bench.md, "Why some code is written by
// hand").
func Scan(body []byte, maxElems int) error {
	if !utf8.Valid(body) {
		return &ShapeError{Problem: NotUTF8}
	}
	return NewScanner(Limits{Other: maxElems}).Scan(body)
}

// addKey records the key body[from:to] in the object f, failing on a key
// already there, an escaped key, or one key too many.
func addKey(f *scanFrame, body []byte, from, to int, escaped bool) error {
	key := body[from:to]
	if escaped {
		return &ShapeError{Problem: EscapedKey, Key: string(key)}
	}
	for _, k := range f.keys[:f.nkeys] {
		if bytes.EqualFold(body[k[0]:k[1]], key) {
			return &ShapeError{Problem: RepeatedKey, Key: string(key)}
		}
	}
	if f.nkeys == MaxKeys {
		return &ShapeError{Problem: TooManyKeys, Key: string(key)}
	}
	f.keys[f.nkeys] = [2]int{from, to}
	f.nkeys++
	f.expectKey = false
	return nil
}
