package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/irpsandbox"
	"github.com/invoiced/invoiced/internal/testwait"
)

// TestIRPSandboxAndCheck runs `invoiced irp-sandbox` on a free port with a
// keys directory, then `invoiced irp-check` against it configured as serve
// will be (INVOICED_IRP_*): it authenticates; a wrong password is the
// IRP's refusal; and the sandbox stops cleanly.
func TestIRPSandboxAndCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	var out, errOut testwait.Buffer
	done := make(chan struct{})
	var served error
	go func() {
		defer close(done)
		served = run(ctx, []string{"irp-sandbox", "--addr", "127.0.0.1:0", "--keys", dir, "--password", "s3cret"}, func(string) string { return "" }, &out, &errOut)
	}()
	base := waitListening(t, &out, &errOut, done, 30*time.Second)
	if !strings.Contains(errOut.String(), filepath.Join(dir, irpsandbox.FileSigningCert)) {
		t.Errorf("irp-sandbox does not say where the certificate is:\n%s", errOut.String())
	}
	env := map[string]string{
		"INVOICED_IRP_URL":           base,
		"INVOICED_IRP_CLIENT_ID":     irpsandbox.DefaultClientID,
		"INVOICED_IRP_CLIENT_SECRET": irpsandbox.DefaultClientSecret,
		"INVOICED_IRP_USER_NAME":     irpsandbox.DefaultUser,
		"INVOICED_IRP_PASSWORD":      "s3cret",
		"INVOICED_IRP_PUBLIC_KEY":    filepath.Join(dir, irpsandbox.FilePublicKey),
		"INVOICED_IRP_SIGNING_CERT":  filepath.Join(dir, irpsandbox.FileSigningCert),
	}
	check := func(args ...string) (string, error) {
		var o, e testwait.Buffer
		err := run(t.Context(), append([]string{"irp-check"}, args...), func(k string) string { return env[k] }, &o, &e)
		return o.String(), err
	}
	got, err := check("--gstin", demoGSTIN)
	if err != nil || !strings.HasPrefix(got, "authenticated at "+base+" as sandbox for "+demoGSTIN+"; token valid until ") {
		t.Fatalf("irp-check = %q, %v", got, err)
	}
	_, err = check("--gstin", demoGSTIN, "--irp-password", "wrong")
	if einvoice.KindOf(err) != einvoice.KindAuth || !strings.Contains(err.Error(), "1008") {
		t.Errorf("irp-check with a wrong password: %v; want the IRP's 1008", err)
	}
	var ue *usageError
	if _, err := check("--gstin", demoGSTIN, "--irp-signing-cert", ""); !errors.As(err, &ue) {
		t.Errorf("irp-check: %v", err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("irp-sandbox did not stop")
	}
	if served != nil {
		t.Errorf("irp-sandbox returned %v", served)
	}
}

// TestIRPFlags: the IRP settings are all or nothing, and their files are
// read and checked before anything is sent.
func TestIRPFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := irpsandbox.LoadOrCreateKeys(dir); err != nil {
		t.Fatal(err)
	}
	pub, cert := filepath.Join(dir, irpsandbox.FilePublicKey), filepath.Join(dir, irpsandbox.FileSigningCert)
	creds := filepath.Join(dir, "creds")
	write := func(s string) string {
		if err := os.WriteFile(creds, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return creds
	}
	good := irpFlags{url: "https://irp.example", clientID: "c", clientSecret: "s", userName: "u", password: "p", publicKey: pub, signingCert: cert, timeout: time.Second}
	if _, on, err := (irpFlags{}).config("serve"); on || err != nil {
		t.Errorf("no --irp-url: on %v, %v; want off", on, err)
	}
	cfg, on, err := good.config("serve")
	if !on || err != nil || cfg.PublicKey == nil || cfg.SigningKey == nil {
		t.Fatalf("config = %+v, %v, %v", cfg, on, err)
	}
	if c, ok := cfg.Credentials("29AAGCB7383J1Z4"); !ok || c.UserName != "u" {
		t.Errorf("default user: %+v, %v", c, ok)
	}
	for _, c := range []struct {
		name string
		edit func(*irpFlags)
		want string
	}{
		{"nothing but the URL", func(f *irpFlags) { *f = irpFlags{url: f.url, timeout: time.Second} }, "--irp-client-id, --irp-client-secret, --irp-public-key, --irp-signing-cert, --irp-user-name or --irp-credentials"},
		{"no such key file", func(f *irpFlags) { f.publicKey = filepath.Join(dir, "nope.pem") }, "--irp-public-key"},
		{"a key file that is no key", func(f *irpFlags) { f.signingCert = write("GSTIN user pw") }, "--irp-signing-cert"},
		{"timeout", func(f *irpFlags) { f.timeout = 0 }, "--irp-timeout"},
		{"credentials line", func(f *irpFlags) { f.credentials = write("27AAPFU0939F1ZV onlyuser\n") }, "line 1: want GSTIN USER PASSWORD"},
		{"credentials GSTIN", func(f *irpFlags) { f.credentials = write("# users\n27AAPFU0939F1ZX u p\n") }, "line 2"},
		{"credentials twice", func(f *irpFlags) { f.credentials = write("27AAPFU0939F1ZV u p\n27aapfu0939f1zv v q\n") }, "listed twice"},
	} {
		f := good
		c.edit(&f)
		_, _, err := f.config("serve")
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want a usage error saying %q", c.name, err, c.want)
		}
	}
	f := good
	f.userName, f.credentials = "", write("# per GSTIN\n27AAPFU0939F1ZV api_pune pass word with spaces\n")
	cfg, _, err = f.config("serve")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cfg.Credentials("27AAPFU0939F1ZV"); !ok || c.UserName != "api_pune" || c.Password != "pass word with spaces" {
		t.Errorf("per-GSTIN user: %+v, %v", c, ok)
	}
	if _, ok := cfg.Credentials("29AAGCB7383J1Z4"); ok {
		t.Error("a GSTIN without a user got one")
	}
}
