package jsonfast

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzObjectMember checks Member against json.Unmarshal into a
// one-field struct, the decoding it replaces, for every object Scan
// lets through: the same key found (or none), with the same value.
func FuzzObjectMember(f *testing.F) {
	for _, s := range []string{
		`{"idempotency_key":"k1","items":[{"description":"a,b}"}]}`,
		`{ "items" : [ {"x":"}\"]"} ] , "IDEMPOTENCY_KEY" : "k" }`,
		`{"idempotency_key":null}`, `{"idempotency_key":12.5e3,"a":true}`, `{"idempotency_key":{"a":[1,{}]}}`,
		`{}`, `{"a":"\\","idempotency_key":"x\u0041"}`, "{\"idempotency_\u212aey\":\"kelvin\"}", `{"buyer":{"idempotency_key":"inner"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		if len(obj) == 0 || obj[0] != '{' || !json.Valid(obj) || Scan(obj, 1<<20) != nil {
			return // Member's precondition
		}
		var k struct {
			Key json.RawMessage `json:"idempotency_key"`
		}
		if err := json.Unmarshal(obj, &k); err != nil {
			t.Fatal(err)
		}
		v, ok := Member(obj, "idempotency_key")
		if ok != (k.Key != nil) {
			t.Fatalf("Member(%s) found %v (%s), json.Unmarshal %v (%s)", obj, ok, v, k.Key != nil, k.Key)
		}
		if !ok {
			return
		}
		var got, exp any
		if err := json.Unmarshal(v, &got); err != nil {
			t.Fatalf("Member(%s) = %q: %v", obj, v, err)
		}
		if err := json.Unmarshal(k.Key, &exp); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, exp) {
			t.Fatalf("Member(%s) = %s, want %s", obj, v, k.Key)
		}
	})
}
