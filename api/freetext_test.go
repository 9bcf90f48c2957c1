package api

import (
	"encoding/json"
	"errors"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/sellers"
	"net/http"
	"testing"
)

// hostileTexts are free texts that must be refused wherever free text is
// accepted: control characters (C0, DEL, C1), terminal escapes, bidi
// overrides and isolates, and invisible characters.
var hostileTexts = map[string]string{
	"NUL":               "chai\x00",
	"newline":           "chai\nstall",
	"ANSI escape":       "\x1b[31mred\x1b[0m",
	"OSC hyperlink":     "\x1b]8;;http://evil/\x07x\x1b]8;;\x07",
	"DEL":               "chai\x7f",
	"C1 NEL":            "ch\u0085ai",
	"C1 CSI":            "\u009b31mred",
	"RLO override":      "invoice\u202Efdp.exe",
	"LRI isolate":       "a\u2066b\u2069",
	"RLM mark":          "a\u200fb",
	"zero-width space":  "ch\u200bai",
	"BOM":               "\ufeffchai",
	"soft hyphen":       "ch\u00adai",
	"line separator":    "chai\u2028stall",
	"ZWJ between ASCII": "Ch\u200dai",
	"tag character":     "chai\U000E0041",
}

// goodTexts must be accepted: scripts of India, with the joiners their
// conjuncts need.
var goodTexts = []string{"चाय की दुकान", "क्\u200dष", "ര\u200cമ", "Chai & Co <Pune>", "Café Ünïcode"}

// TestFreeTextRefusesControlAndInvisible sends each hostile text in each
// free-text field of the API: 422, never 500, never stored.
func TestFreeTextRefusesControlAndInvisible(t *testing.T) {
	t.Parallel()
	e := setup(t)
	target := e.mustIssue("CH1", "")
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	fields := map[string]func(text string) resp{
		"series shop": func(x string) resp {
			return e.do("POST", "/v1/series", e.all, `{"code":"X1","doc_type":"invoice","format":"X1/{SEQ:4}","shop":`+quote(x)+`}`)
		},
		"buyer name": func(x string) resp {
			return e.do("POST", "/v1/series/CH1/invoices", e.all, `{"buyer":{"name":`+quote(x)+`},"items":[{"description":"Chai","hsn":"0902","quantity":"1","unit_price":"10","gst_rate":"5"}]}`)
		},
		"item description": func(x string) resp {
			return e.do("POST", "/v1/series/CH1/invoices", e.all, `{"items":[{"description":`+quote(x)+`,"hsn":"0902","quantity":"1","unit_price":"10","gst_rate":"5"}]}`)
		},
		"cancel reason": func(x string) resp {
			return e.do("POST", "/v1/invoices/"+target.ID+"/cancel", e.all, `{"reason":`+quote(x)+`}`)
		},
	}
	for field, send := range fields {
		for name, text := range hostileTexts {
			if r := send(text); r.status != http.StatusUnprocessableEntity {
				t.Errorf("%s with %s: status %d, want 422: %s", field, name, r.status, r.body)
			}
		}
	}
	// Nothing was stored: the next invoice is serial 2, the target is not cancelled.
	if next := e.mustIssue("CH1", ""); next.Serial != 2 {
		t.Fatalf("next serial %d after the refused requests, want 2", next.Serial)
	}
	for i, text := range goodTexts {
		if r := fields["item description"](text); r.status != http.StatusCreated {
			t.Errorf("description %q: status %d: %s", text, r.status, r.body)
		}
		if i == 0 {
			e.wantStatus(fields["series shop"](text), http.StatusCreated)
		}
	}
	// A seller's name (sellers add) is free text too.
	for name, text := range hostileTexts {
		if _, err := sellers.Create(t.Context(), e.pool, otherGSTIN, text); !errors.Is(err, gst.ErrInvalidSeries) {
			t.Errorf("seller name with %s: %v, want ErrInvalidSeries", name, err)
		}
	}
}
