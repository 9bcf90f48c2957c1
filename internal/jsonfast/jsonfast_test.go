package jsonfast

import (
	"encoding/json"
	"testing"
)

// TestAppendStringIsMarshal: AppendString writes what json.Marshal writes,
// for every byte value in a string.
func TestAppendStringIsMarshal(t *testing.T) {
	t.Parallel()
	cases := []string{"", "plain", "Śrī Stores", "\u2028", "a\xffb", `"<&>\`}
	for c := range 256 {
		cases = append(cases, "a"+string([]byte{byte(c)})+"z")
	}
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %s, json.Marshal %s", s, got[1:], want)
		}
	}
}
