package jsonfast

import (
	"encoding/json"
	"maps"
	"testing"
)

// FuzzPlainObject: whatever object of string members Plain reads,
// encoding/json reads the same members with the same values, and the raw
// bytes RawObject returns are the object, without the white space after
// it.
func FuzzPlainObject(f *testing.F) {
	for _, s := range []string{
		`{"a":"x","b":"y"}`, ` { "a" : "x" , "c" : null } `, `{}`, `{"a":"\u0041"}`, `{"A":"x"}`,
		`{"a":1}`, `{"a":"x",}`, `{"d":"x"}`, `{"a":"x"} trailing`, `{"b":"Śrī"}`,
	} {
		f.Add([]byte(s))
	}
	keys := []string{"a", "b", "c"}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) || Scan(body, 1<<20) != nil {
			return // Plain's precondition: valid UTF-8, no repeated keys
		}
		p := NewPlain(body)
		p.Space()
		got := map[string]string{}
		raw, ok := p.RawObject(keys, func(k string) bool {
			v, ok := p.Str()
			got[k] = v
			return ok
		})
		if !ok {
			return // not the plain case: encoding/json judges it
		}
		if raw[0] != '{' || raw[len(raw)-1] != '}' {
			t.Fatalf("%q: RawObject returned %q, not the object", body, raw)
		}
		p.Space()
		if !p.Done() {
			t.Fatalf("%q: Plain read a valid body only up to %d", body, p.Offset())
		}
		var want map[string]*string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("%q: Plain read %q, encoding/json refuses it: %v", body, raw, err)
		}
		exp := map[string]string{}
		for k, v := range want {
			if v != nil {
				exp[k] = *v
			}
		}
		if !maps.Equal(got, exp) {
			t.Fatalf("%q: Plain read %v, encoding/json %v", body, got, exp)
		}
	})
}
