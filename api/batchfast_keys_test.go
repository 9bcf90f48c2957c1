package api

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// jsonKeys returns the JSON keys of struct type t as encoding/json reads
// them: each field's tag name (its Go name when untagged), the fields of
// embedded structs in place of the struct, "-" and unexported fields left
// out.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			keys = append(keys, jsonKeys(f.Type)...)
		case !f.IsExported():
		case name == "":
			keys = append(keys, f.Name)
		default:
			keys = append(keys, name)
		}
	}
	slices.Sort(keys)
	return keys
}

// TestFastBatchKeysAreTheStructs: the fast path's key lists restate the
// JSON tags of the bodies encoding/json decodes; a field added to a body
// and not to its list would silently send every batch that uses it down
// the slow path (the answers stay right, FuzzFastBatch cannot tell). The
// only key left out on purpose is an item's "original": a credit note
// takes the slow path.
func TestFastBatchKeysAreTheStructs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		list    []string
		body    any
		slowFor []string // keys the fast path leaves to encoding/json
	}{
		{"itemKeys", itemKeys, batchItemBody{}, []string{"original"}},
		{"buyerKeys", buyerKeys, buyerBody{}, nil},
		{"addressKeys", addressKeys, addressBody{}, nil},
		{"shipToKeys", shipToKeys, shipToBody{}, nil},
		{"lineKeys", lineKeys, itemBody{}, nil},
	} {
		want := slices.DeleteFunc(jsonKeys(reflect.TypeOf(c.body)), func(k string) bool { return slices.Contains(c.slowFor, k) })
		got := slices.Sorted(slices.Values(c.list))
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, but %T decodes %v (less %v): add the new key to the list and to the fast path, or to slowFor here with a reason",
				c.name, got, c.body, want, c.slowFor)
		}
	}
}
