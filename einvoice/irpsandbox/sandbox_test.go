package irpsandbox_test

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/einvoicetest"
	"github.com/invoiced/invoiced/einvoice/irp"
	"github.com/invoiced/invoiced/einvoice/irpsandbox"
	"github.com/invoiced/invoiced/einvoice/irpsandbox/sandboxtest"
)

const seller = einvoicetest.SellerGSTIN

// raw speaks the protocol by hand, below the client: what the sandbox does
// with requests the client would never send.
type raw struct {
	t     *testing.T
	env   *sandboxtest.Env
	token string
	sek   []byte
}

// post sends body to path with the client headers (and the session's,
// when authenticated) and returns the answer.
func (r *raw) post(path string, body any) irp.Answer {
	r.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, r.env.URL+path, bytes.NewReader(b))
	req.Header.Set(irp.HeaderClientID, irpsandbox.DefaultClientID)
	req.Header.Set(irp.HeaderClientSecret, irpsandbox.DefaultClientSecret)
	req.Header.Set(irp.HeaderGSTIN, seller)
	req.Header.Set(irp.HeaderUserName, irpsandbox.DefaultUser)
	req.Header.Set(irp.HeaderAuthToken, r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var a irp.Answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		r.t.Fatal(err)
	}
	return a
}

// auth authenticates (forcing a new token when force) and returns the
// answer's data.
func (r *raw) auth(force bool) irp.AuthData {
	r.t.Helper()
	appKey := make([]byte, irp.KeySize)
	_, _ = rand.Read(appKey)
	plain, _ := json.Marshal(irp.AuthPayload{UserName: irpsandbox.DefaultUser, Password: irpsandbox.DefaultPassword,
		AppKey: base64.StdEncoding.EncodeToString(appKey), ForceRefreshAccessToken: force})
	pub, err := irp.ParsePublicKey(sandboxtest.Keys(r.t).PublicKeyPEM())
	if err != nil {
		r.t.Fatal(err)
	}
	enc, err := rsa.EncryptPKCS1v15(rand.Reader, pub, []byte(base64.StdEncoding.EncodeToString(plain))) //nolint:staticcheck // SA1019: the protocol's
	if err != nil {
		r.t.Fatal(err)
	}
	a := r.post(irp.PathAuth, irp.Request{Data: base64.StdEncoding.EncodeToString(enc)})
	var d irp.AuthData
	if a.Status != 1 || json.Unmarshal(a.Data, &d) != nil {
		r.t.Fatalf("auth answer %+v", a)
	}
	ct, _ := base64.StdEncoding.DecodeString(d.Sek)
	if r.sek, err = irp.DecryptECB(appKey, ct); err != nil {
		r.t.Fatal(err)
	}
	r.token = d.AuthToken
	return d
}

// send posts plain encrypted with the session key.
func (r *raw) send(path string, plain []byte) irp.Answer {
	r.t.Helper()
	ct, err := irp.EncryptECB(r.sek, plain)
	if err != nil {
		r.t.Fatal(err)
	}
	return r.post(path, irp.Request{Data: base64.StdEncoding.EncodeToString(ct)})
}

func codes(a irp.Answer) string {
	var cs []string
	for _, d := range a.ErrorDetails {
		cs = append(cs, d.Code)
	}
	return strings.Join(cs, ",")
}

// TestSchemaErrors: the sandbox checks what it receives against the same
// schema and answers each violation as 2140, registering nothing.
func TestSchemaErrors(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Start(t, irpsandbox.Config{})
	r := &raw{t: t, env: env}
	r.auth(false)
	b, _ := json.Marshal(einvoicetest.Payload(t, 1, einvoicetest.OtherStateGSTIN))
	bad := bytes.Replace(b, []byte(`"Pin":560095`), []byte(`"Pin":"560095"`), 1)
	bad = bytes.Replace(bad, []byte(`"Typ":"INV"`), []byte(`"Typ":"BOS"`), 1)
	a := r.send(irp.PathInvoice, bad)
	if a.Status != 0 || codes(a) != "2140,2140" || !strings.Contains(a.ErrorDetails[0].Message, "/BuyerDtls/Pin") {
		t.Errorf("answer %+v; want two 2140s naming /BuyerDtls/Pin and /DocDtls/Typ", a)
	}
	if a := r.send(irp.PathInvoice, []byte("{")); codes(a) != "2140" {
		t.Errorf("answer to broken JSON %+v", a)
	}
	if rs := env.Server.Registrations(""); len(rs) != 0 {
		t.Errorf("registered %+v", rs)
	}
	// A well-formed payload of another supplier than the session's.
	other := bytes.Replace(b, []byte(seller), []byte("29AAGCB7383J1Z4"), 1)
	if a := r.send(irp.PathInvoice, other); codes(a) != "2143" {
		t.Errorf("answer to another supplier's invoice %+v", a)
	}
	// Upper-casing: a lower-case number is the same document.
	lower := bytes.Replace(b, []byte(`"No":"CH1/`), []byte(`"No":"ch1/`), 1)
	if a := r.send(irp.PathInvoice, b); a.Status != 1 {
		t.Fatalf("answer %+v", a)
	}
	if a := r.send(irp.PathInvoice, lower); codes(a) != "2150" {
		t.Errorf("answer to the number in lower case %+v; want 2150", a)
	}
}

// TestTokens: within a token's life the IRP answers the same token; asked
// to force in its last ten minutes, a new one, and the old one is refused.
func TestTokens(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Start(t, irpsandbox.Config{})
	r := &raw{t: t, env: env}
	first := r.auth(false)
	if again := r.auth(true); again.AuthToken != first.AuthToken {
		t.Errorf("forced renewal with 60 minutes left gave a new token")
	}
	env.Server.Advance(55 * time.Minute)
	renewed := r.auth(true)
	if renewed.AuthToken == first.AuthToken || renewed.TokenExpiry == first.TokenExpiry {
		t.Errorf("forced renewal in the last 10 minutes gave the same token")
	}
	old := &raw{t: t, env: env, token: first.AuthToken, sek: r.sek}
	if a := old.send(irp.PathCancel, []byte(`{}`)); codes(a) != "1005" {
		t.Errorf("answer to the replaced token %+v; want 1005", a)
	}
	env.Server.Advance(time.Hour)
	if a := r.send(irp.PathCancel, []byte(`{}`)); codes(a) != "1005" {
		t.Errorf("answer to an expired token %+v; want 1005", a)
	}
}

// TestFaultCounting: Times bounds a fault, Probability draws, and a spent
// fault is gone.
func TestFaultCounting(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Start(t, irpsandbox.Config{Seed: 7})
	s := env.Server
	for _, bad := range []irpsandbox.Fault{
		{Mode: "explode"}, {Op: "print", Mode: irpsandbox.DropAfter}, {Mode: irpsandbox.DelayAfter},
		{Mode: irpsandbox.DropAfter, Probability: 2}, {Mode: irpsandbox.DropAfter, Times: -1},
	} {
		if err := s.AddFault(bad); err == nil {
			t.Errorf("AddFault(%+v) succeeded", bad)
		}
	}
	if err := s.AddFault(irpsandbox.Fault{Op: einvoice.OpCancel, Mode: irpsandbox.DropBefore, Times: 2}); err != nil {
		t.Fatal(err)
	}
	if f := s.Faults(); len(f) != 1 || f[0].Times != 2 {
		t.Fatalf("Faults = %+v", f)
	}
	r := &raw{t: t, env: env}
	r.auth(false)
	for i := 0; i < 2; i++ {
		if _, err := http.Post(env.URL+irp.PathCancel, "application/json", strings.NewReader(`{}`)); err == nil {
			t.Errorf("request %d was answered through a drop fault", i)
		}
	}
	if f := s.Faults(); len(f) != 0 {
		t.Errorf("a spent fault remains: %+v", f)
	}
	if n := s.Calls(einvoice.OpCancel); n != 2 {
		t.Errorf("Calls(cancel) = %d", n)
	}
	if err := s.AddFault(irpsandbox.Fault{Op: einvoice.OpLookup, Mode: irpsandbox.DropBefore, Probability: 0.5}); err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for i := 0; i < 200; i++ {
		if _, err := http.Get(env.URL + irp.PathByDocument); err != nil {
			dropped++
		}
	}
	if dropped < 60 || dropped > 140 {
		t.Errorf("a fault of probability 0.5 dropped %d of 200", dropped)
	}
}

// TestControls drives the sandbox over its HTTP controls, as a demo or
// another process would.
func TestControls(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Start(t, irpsandbox.Config{})
	cl := sandboxtest.Client(t, env.ClientConfig(t, 5*time.Second))
	reg, err := cl.Register(t.Context(), einvoicetest.Payload(t, 1, einvoicetest.OtherStateGSTIN))
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string, want int) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, env.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s = %d %s; want %d", method, path, resp.StatusCode, b, want)
		}
		return b
	}
	var list struct {
		Registrations []irpsandbox.Registration `json:"registrations"`
	}
	if err := json.Unmarshal(do("GET", "/sandbox/registrations?gstin="+seller, "", 200), &list); err != nil ||
		len(list.Registrations) != 1 || list.Registrations[0].IRN != reg.IRN || list.Registrations[0].Requests != 1 {
		t.Errorf("registrations %s, %v", do("GET", "/sandbox/registrations", "", 200), err)
	}
	if b := do("GET", "/sandbox/registrations?gstin=29AAGCB7383J1Z4", "", 200); !strings.Contains(string(b), `"registrations":[]`) {
		t.Errorf("registrations of another GSTIN: %s", b)
	}
	do("POST", "/sandbox/faults", `{"op":"register","mode":"delay_after","delay":"2s","times":1}`, 201)
	if f := env.Server.Faults(); len(f) != 1 || f[0].Delay != 2*time.Second || f[0].Op != einvoice.OpRegister {
		t.Errorf("faults %+v", f)
	}
	do("POST", "/sandbox/faults", `{"mode":"delay_after","delay":"2"}`, 400)
	do("POST", "/sandbox/faults", `{"mode":"sideways"}`, 400)
	do("DELETE", "/sandbox/faults", "", 204)
	do("POST", "/sandbox/ewaybills", `{"irn":"`+reg.IRN+`","active":true}`, 200)
	do("POST", "/sandbox/ewaybills", `{"irn":"nope","active":true}`, 404)
	before := env.Server.Now()
	do("POST", "/sandbox/clock", `{"advance":"25h"}`, 200)
	if d := env.Server.Now().Sub(before); d < 25*time.Hour || d > 26*time.Hour {
		t.Errorf("the clock moved %v", d)
	}
	do("POST", "/sandbox/tokens/expire", "", 204)
	if _, err := irp.ParsePublicKey(do("GET", "/sandbox/certificate", "", 200)); err != nil {
		t.Errorf("certificate: %v", err)
	}
	if _, err := irp.ParsePublicKey(do("GET", "/sandbox/public-key", "", 200)); err != nil {
		t.Errorf("public key: %v", err)
	}
	_, err = cl.Cancel(t.Context(), seller, einvoice.CancelRequest{IRN: reg.IRN, Reason: einvoice.CancelOther, Remark: "late"})
	if einvoice.KindOf(err) != einvoice.KindCancelWindowClosed {
		t.Errorf("Cancel after the clock moved 25h = %v", err)
	}
}

// TestKeysDirectory: keys are generated once into a directory, private
// ones readable by the owner alone, and read back the same.
func TestKeysDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "keys")
	k, err := irpsandbox.LoadOrCreateKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{irpsandbox.FileEncryptionKey: 0o600, irpsandbox.FileSigningKey: 0o600,
		irpsandbox.FilePublicKey: 0o644, irpsandbox.FileSigningCert: 0o644} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v, %v; want mode %v", name, fi.Mode(), err, mode)
		}
	}
	again, err := irpsandbox.LoadOrCreateKeys(dir)
	if err != nil || !again.Encryption.Equal(k.Encryption) || !again.Signing.Equal(k.Signing) || !again.SigningCert.Equal(k.SigningCert) {
		t.Errorf("reloaded keys differ: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, irpsandbox.FileSigningKey)); err != nil {
		t.Fatal(err)
	}
	if _, err := irpsandbox.LoadOrCreateKeys(dir); err == nil {
		t.Error("a directory with three of the four files was accepted")
	}
}
