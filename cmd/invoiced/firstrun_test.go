package main

import (
	"io"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/internal/dbtest"
)

// TestSellersAddWarnsWithoutAddress: a seller added without --address is
// added, with a warning on stderr that its receipts will lack what Rule
// 46(a) asks for and how to add it; with an address there is no warning.
func TestSellersAddWarnsWithoutAddress(t *testing.T) {
	t.Parallel()
	url := dbtest.NewURL(t)
	out, errOut, err := cli(t.Context(), url, "sellers", "add", "--gstin", demoGSTIN, "--name", "Demo Chai Stall, Pune")
	if err != nil || !strings.Contains(out, demoGSTIN) {
		t.Fatalf("sellers add: %v, stdout %q", err, out)
	}
	if !strings.Contains(errOut, "warning: seller "+demoGSTIN+" has no address") || !strings.Contains(errOut, "Rule 46") ||
		!strings.Contains(errOut, "invoiced sellers update --gstin "+demoGSTIN+" --address") {
		t.Fatalf("sellers add without --address printed on stderr %q, want a warning naming Rule 46 and sellers update", errOut)
	}
	_, errOut, err = cli(t.Context(), url, "sellers", "add", "--gstin", "29AAGCB7383J1Z4", "--name", "Bangalore Traders", "--address", "MG Road, Bengaluru 560001")
	if err != nil || errOut != "" {
		t.Fatalf("sellers add with --address: %v, stderr %q", err, errOut)
	}
}

// TestServePublicURL: --public-url (or INVOICED_PUBLIC_URL) must be an
// absolute http(s) URL without query or fragment.
func TestServePublicURL(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"bills.example.in", "ftp://bills.example.in", "https://", "https://bills.example.in/?x=1", "https://bills.example.in/#r"} {
		_, _, err := cli(t.Context(), "", "serve", "--public-url", bad)
		if err == nil || !strings.Contains(err.Error(), "--public-url") {
			t.Errorf("serve --public-url %q: err = %v, want a usage error naming --public-url", bad, err)
		}
	}
	for in, want := range map[string]string{"https://bills.example.in/": "https://bills.example.in", "http://10.0.0.5:8080/invoiced": "http://10.0.0.5:8080/invoiced", "": ""} {
		if got, err := parsePublicURL(in); err != nil || got != want {
			t.Errorf("parsePublicURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestBoolEnvNamesItsValues: a serve switch set by its environment
// variable to something that is not a boolean names the values it takes,
// not Go's "parse error".
func TestBoolEnvNamesItsValues(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string {
		if k == "INVOICED_BATCHING" {
			return "yes"
		}
		return ""
	}
	err := run(t.Context(), []string{"serve"}, getenv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `INVOICED_BATCHING="yes"`) || !strings.Contains(err.Error(), "true or false") {
		t.Fatalf("serve with INVOICED_BATCHING=yes: %v, want the variable and the values it takes", err)
	}
}
