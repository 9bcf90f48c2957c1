package einvoice_test

import (
	"encoding/json"
	"testing"

	"github.com/invoiced/invoiced/einvoice"
)

func TestNumberJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, out string }{{"0.1", "0.1"}, {"21.00", "21"}, {"-0.39", "-0.39"}, {"1000.123", "1000.123"}} {
		b, err := json.Marshal(einvoice.NumString(c.in))
		if err != nil || string(b) != c.out {
			t.Errorf("Marshal(%s) = %s, %v; want %s", c.in, b, err, c.out)
		}
		var n einvoice.Number
		if err := json.Unmarshal(b, &n); err != nil || !n.Equal(einvoice.NumString(c.in)) {
			t.Errorf("Unmarshal(%s) = %s, %v", b, n, err)
		}
	}
	for _, bad := range []string{`"1.5"`, `null`, `true`, `{}`} {
		var n einvoice.Number
		if err := json.Unmarshal([]byte(bad), &n); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
}

func TestNumberTextJSON(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`112010000000001`, `"112010000000001"`} {
		var n einvoice.NumberText
		if err := json.Unmarshal([]byte(in), &n); err != nil || n != "112010000000001" {
			t.Errorf("Unmarshal(%s) = %q, %v", in, n, err)
		}
	}
	var n einvoice.NumberText
	if err := json.Unmarshal([]byte(`1.5`), &n); err == nil {
		t.Error("Unmarshal(1.5) succeeded")
	}
	if b, err := json.Marshal(einvoice.NumberText("112010000000001")); err != nil || string(b) != "112010000000001" {
		t.Errorf("Marshal = %s, %v", b, err)
	}
}
