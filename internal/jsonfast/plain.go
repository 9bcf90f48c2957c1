package jsonfast

// Plain reads the plain case of JSON in one pass, building nothing it is
// not asked for: strings without escapes or control characters, keys
// written exactly as expected, null. Its methods report false when the
// input leaves the plain case; the reader is then abandoned and the input
// goes to encoding/json whole, which judges it. Those that read a token
// skip the white space after it. The input must be valid UTF-8 (Scan has
// checked it), so the strings Str returns are what encoding/json returns.
// api's batch fast path reads its items with it; FuzzFastBatch there holds
// the result to encoding/json, and FuzzPlainObject here.
type Plain struct {
	b []byte
	i int
}

// NewPlain returns a reader at the start of b.
func NewPlain(b []byte) *Plain { return &Plain{b: b} }

// Offset returns how many bytes of the input have been read.
func (p *Plain) Offset() int { return p.i }

// Done reports whether the whole input has been read.
func (p *Plain) Done() bool { return p.i == len(p.b) }

// Space skips JSON white space.
func (p *Plain) Space() { p.i = SkipSpace(p.b, p.i) }

// Byte reads c.
func (p *Plain) Byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		p.Space()
		return true
	}
	return false
}

// Str reads a string without escapes or control characters and returns
// its contents.
func (p *Plain) Str() (string, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	for j := p.i + 1; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s := string(p.b[p.i+1 : j])
			p.i = j + 1
			p.Space()
			return s, true
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// Key reads the key name and its colon.
func (p *Plain) Key(name string) bool {
	k, ok := p.RawKey()
	return ok && string(k) == name
}

// RawKey reads a key without escapes and its colon and returns the key's
// bytes (a switch on string(k) builds no string).
func (p *Plain) RawKey() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	j := p.i + 1
	for j < len(p.b) && p.b[j] != '"' && p.b[j] != '\\' && p.b[j] >= 0x20 {
		j++
	}
	if j >= len(p.b) || p.b[j] != '"' {
		return nil, false
	}
	k := p.b[p.i+1 : j]
	p.i = j + 1
	p.Space()
	if !p.Byte(':') {
		return nil, false
	}
	return k, true
}

// Object reads an object whose keys are all among keys, written exactly
// so. A null value leaves its field as it is (as encoding/json does: each
// key is read once, into a zero field); for any other value it calls
// member with the key, which reports whether it read the value.
func (p *Plain) Object(keys []string, member func(key string) bool) bool {
	if !p.Byte('{') {
		return false
	}
	if p.Byte('}') {
		return true
	}
	for {
		k, ok := p.RawKey()
		if !ok {
			return false
		}
		name := ""
		for _, n := range keys {
			if string(k) == n {
				name = n
				break
			}
		}
		switch {
		case name == "":
			return false
		case p.Null():
		case !member(name):
			return false
		}
		if p.Byte('}') {
			return true
		}
		if !p.Byte(',') {
			return false
		}
	}
}

// RawObject reads an object as Object does and returns its bytes, from
// '{' to '}' (what encoding/json's RawMessage of it holds); the white space
// after it is left unread.
func (p *Plain) RawObject(keys []string, member func(key string) bool) ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return nil, false
	}
	start := p.i
	if !p.Object(keys, member) {
		return nil, false
	}
	// Object skipped the white space after '}': step back onto it.
	for p.i > 0 && p.b[p.i-1] != '}' {
		p.i--
	}
	return p.b[start:p.i], true
}

// Null reads a null, if the value is one.
func (p *Plain) Null() bool {
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		p.Space()
		return true
	}
	return false
}
