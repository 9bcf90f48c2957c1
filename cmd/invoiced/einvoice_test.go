package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/einvoice/irpsandbox"
	"github.com/invoiced/invoiced/internal/testwait"
)

// eInvoiced is the part of an invoice answer the e-invoicing test reads.
type eInvoiced struct {
	ID          string `json:"id"`
	Number      string `json:"number"`
	FY          string `json:"fy"`
	Status      string `json:"status"`
	PublicID    string `json:"public_id"`
	InvoiceDate string `json:"invoice_date"`
	EInvoice    struct {
		Status       string `json:"status"`
		IRN          string `json:"irn"`
		AckNo        string `json:"ack_no"`
		SignedQRCode string `json:"signed_qr_code"`
	} `json:"e_invoice"`
}

// TestEInvoicingEndToEnd: `invoiced irp-sandbox` on a free port, a seller
// given its postal address and e-invoicing on through the command line,
// and `serve` configured for the sandbox through INVOICED_IRP_*: a B2B
// invoice is answered pending and registered within seconds with the IRN
// the IRP computes (SHA-256 of GSTIN + FY + INV + number), its receipt
// prints the IRN and the signed QR code, and a cancel within 24 hours
// cancels the IRN at the IRP and the invoice. serve refuses to start
// without an IRP while the seller e-invoices.
func TestEInvoicingEndToEnd(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()

	keys := t.TempDir()
	var sbOut, sbErr testwait.Buffer
	sbDone := make(chan struct{})
	go func() {
		defer close(sbDone)
		_ = run(ctx, []string{"irp-sandbox", "--addr", "127.0.0.1:0", "--keys", keys}, func(string) string { return "" }, &sbOut, &sbErr)
	}()
	irpURL := waitListening(t, &sbOut, &sbErr, sbDone, 30*time.Second)

	if _, _, err := cli(ctx, f.url, "sellers", "update", "--gstin", demoGSTIN, "--e-invoicing", "on"); err == nil || !strings.Contains(err.Error(), "address") {
		t.Fatalf("e-invoicing on without a postal address: %v, want a refusal naming the address", err)
	}
	out, errOut, err := cli(ctx, f.url, "sellers", "update", "--gstin", demoGSTIN, "--address-line1", "Platform 1, Pune Junction",
		"--city", "Pune", "--pin", "411001", "--e-invoicing", "on")
	if err != nil || !strings.Contains(out, " on\n") || !strings.Contains(errOut, "--irp-url") {
		t.Fatalf("sellers update --e-invoicing on: %v\n%s\n%s", err, out, errOut)
	}

	// Without an IRP, serve refuses while a seller e-invoices.
	if _, _, err := cli(ctx, f.url, "serve", "--addr", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "--irp-url") {
		t.Fatalf("serve without an IRP: %v, want a refusal naming --irp-url", err)
	}

	env := map[string]string{
		"DATABASE_URL":               f.url,
		"INVOICED_IRP_URL":           irpURL,
		"INVOICED_IRP_CLIENT_ID":     irpsandbox.DefaultClientID,
		"INVOICED_IRP_CLIENT_SECRET": irpsandbox.DefaultClientSecret,
		"INVOICED_IRP_USER_NAME":     irpsandbox.DefaultUser,
		"INVOICED_IRP_PASSWORD":      irpsandbox.DefaultPassword,
		"INVOICED_IRP_PUBLIC_KEY":    filepath.Join(keys, irpsandbox.FilePublicKey),
		"INVOICED_IRP_SIGNING_CERT":  filepath.Join(keys, irpsandbox.FileSigningCert),
	}
	var srvOut, srvErr testwait.Buffer
	srvDone := make(chan struct{})
	go func() {
		defer close(srvDone)
		_ = run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--log-requests=false"}, func(k string) string { return env[k] }, &srvOut, &srvErr)
	}()
	base := waitListening(t, &srvOut, &srvErr, srvDone, 30*time.Second)
	c := &http.Client{Timeout: 20 * time.Second}
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+f.key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	decode := func(b []byte) eInvoiced {
		t.Helper()
		var inv eInvoiced
		if err := json.Unmarshal(b, &inv); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return inv
	}

	status, body, err := issue(ctx, c, base, f.key, "e2e-einvoice-1")
	if err != nil || status != http.StatusCreated {
		t.Fatalf("issue: %d %s %v", status, body, err)
	}
	inv := decode(body)
	if inv.EInvoice.Status != "pending" {
		t.Fatalf("issued: e_invoice %+v, want pending", inv.EInvoice)
	}
	sum := sha256.Sum256([]byte(demoGSTIN + inv.FY + "INV" + inv.Number))
	wantIRN := hex.EncodeToString(sum[:])
	began := time.Now()
	testwait.Until(t, 20*time.Second, func() bool {
		_, b := call("GET", "/v1/invoices/"+inv.ID, "")
		inv = decode(b)
		return inv.EInvoice.Status != "pending"
	}, "invoice %s to leave pending (server log:\n%s)", inv.Number, srvErr.String())
	if inv.EInvoice.Status != "registered" || inv.EInvoice.IRN != wantIRN || inv.EInvoice.AckNo == "" || inv.EInvoice.SignedQRCode == "" {
		t.Fatalf("after %v: e_invoice %+v, want registered with IRN %s", time.Since(began), inv.EInvoice, wantIRN)
	}
	t.Logf("registered %s in %v: IRN %s", inv.Number, time.Since(began).Round(time.Millisecond), inv.EInvoice.IRN)

	resp, err := c.Get(base + "/r/" + inv.PublicID)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{wantIRN, "Ack No. " + inv.EInvoice.AckNo, `<svg xmlns="http://www.w3.org/2000/svg"`, "signed QR code of IRN " + wantIRN} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the receipt lacks %q", want)
		}
	}

	status, body = call("POST", "/v1/invoices/"+inv.ID+"/cancel", `{"reason": "order cancelled by the buyer", "e_invoice_reason": "order_cancelled"}`)
	if got := decode(body); status != http.StatusOK || got.Status != "cancelled" || got.EInvoice.Status != "cancelled" || got.EInvoice.IRN != wantIRN {
		t.Fatalf("cancel within 24 h: %d %s", status, body)
	}
	resp, err = c.Get(irpURL + "/sandbox/registrations?gstin=" + demoGSTIN)
	if err != nil {
		t.Fatal(err)
	}
	var listed struct {
		Registrations []irpsandbox.Registration `json:"registrations"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&listed); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	regs := listed.Registrations
	if len(regs) != 1 || regs[0].IRN != wantIRN || regs[0].Status != "CNL" || regs[0].CancelRsn != "3" {
		t.Fatalf("at the IRP: %+v, want %s cancelled for reason 3", regs, wantIRN)
	}
	stop()
	<-srvDone
	<-sbDone
}
