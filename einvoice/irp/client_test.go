package irp_test

import (
	"errors"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/einvoicetest"
	"github.com/invoiced/invoiced/einvoice/irp"
	"github.com/invoiced/invoiced/einvoice/irpsandbox"
	"github.com/invoiced/invoiced/einvoice/irpsandbox/sandboxtest"
)

const (
	seller = einvoicetest.SellerGSTIN
	buyer  = einvoicetest.OtherStateGSTIN
)

// setup starts a sandbox and a client of it that waits at most timeout for
// an answer.
func setup(t *testing.T, timeout time.Duration) (*sandboxtest.Env, *irp.Client) {
	t.Helper()
	env := sandboxtest.Start(t, irpsandbox.Config{})
	return env, sandboxtest.Client(t, env.ClientConfig(t, timeout))
}

// register registers p with c and returns the registration, failing the
// test when it cannot.
func register(t *testing.T, c *irp.Client, p *einvoice.Payload) *einvoice.Registration {
	t.Helper()
	reg, err := c.Register(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// kindOf returns err's kind, failing the test when err is nil.
func kindOf(t *testing.T, err error) einvoice.Kind {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	return einvoice.KindOf(err)
}

// TestRegister registers an invoice end to end: authentication, encrypted
// payload, signed answer verified, IRN as the key says, one registration.
func TestRegister(t *testing.T) {
	t.Parallel()
	env, c := setup(t, 5*time.Second)
	p := einvoicetest.Payload(t, 1, buyer)
	key, _ := einvoice.KeyOf(p)
	reg := register(t, c, p)
	if reg.IRN != key.IRN() || !regexp.MustCompile(`^[0-9]{15}$`).MatchString(reg.AckNo) || reg.Status != einvoice.IRNActive || reg.Partial() {
		t.Errorf("registration %+v; want IRN %s, a 15-digit AckNo, ACT", reg, key.IRN())
	}
	if q := reg.QR; q.Irn != reg.IRN || q.SellerGstin != seller || q.BuyerGstin != buyer || q.DocNo != p.DocDtls.No ||
		q.DocTyp != einvoice.TypeInvoice || !q.TotInvVal.Equal(p.ValDtls.TotInvVal) || q.ItemCnt != 1 || q.MainHsnCode != "0902" {
		t.Errorf("QR %+v does not describe the payload", q)
	}
	if s := reg.Signed; s == nil || s.Irn != reg.IRN || string(s.AckNo) != reg.AckNo || s.DocDtls != p.DocDtls {
		t.Errorf("signed invoice %+v", s)
	}
	if d := time.Since(reg.AckDate); d < -time.Minute || d > time.Minute {
		t.Errorf("AckDate %v is not now", reg.AckDate)
	}
	if rs := env.Server.Registrations(seller); len(rs) != 1 || rs[0].IRN != reg.IRN || rs[0].AckNo != reg.AckNo {
		t.Errorf("the sandbox holds %+v", rs)
	}
}

// TestDuplicateIsRecovered registers a document twice: the second answer is
// 2150 naming the first, and RegisterOnce recovers that same registration.
func TestDuplicateIsRecovered(t *testing.T) {
	t.Parallel()
	env, c := setup(t, 5*time.Second)
	ctx := t.Context()
	p := einvoicetest.Payload(t, 2, buyer)
	first := register(t, c, p)
	_, err := c.Register(ctx, p)
	var e *einvoice.Error
	if !errors.As(err, &e) || e.Kind != einvoice.KindDuplicate || e.Duplicate == nil || e.Duplicate.IRN != first.IRN ||
		e.Duplicate.AckNo != first.AckNo || !e.Duplicate.AckDate.Equal(first.AckDate) || !e.HasCode("2150") {
		t.Fatalf("second Register = %v (%+v); want 2150 naming %s", err, e, first.IRN)
	}
	again, err := einvoice.RegisterOnce(ctx, c, p)
	if err != nil || again.IRN != first.IRN || again.AckNo != first.AckNo || again.SignedQRCode != first.SignedQRCode {
		t.Fatalf("RegisterOnce = %+v, %v; want the first registration", again, err)
	}
	if rs := env.Server.Registrations(seller); len(rs) != 1 || rs[0].Requests != 3 {
		t.Errorf("the sandbox holds %+v; want one registration asked for 3 times", rs)
	}
}

// TestLookups finds a registration by document and by IRN, and says
// not found and gone as the IRP does.
func TestLookups(t *testing.T) {
	t.Parallel()
	env, c := setup(t, 5*time.Second)
	ctx := t.Context()
	p := einvoicetest.Payload(t, 3, buyer)
	reg := register(t, c, p)
	key, _ := einvoice.KeyOf(p)
	byDoc, err := c.Lookup(ctx, key)
	if err != nil || byDoc.IRN != reg.IRN || byDoc.SignedQRCode != reg.SignedQRCode {
		t.Errorf("Lookup = %+v, %v", byDoc, err)
	}
	byIRN, err := c.Get(ctx, seller, reg.IRN)
	if err != nil || byIRN.AckNo != reg.AckNo {
		t.Errorf("Get = %+v, %v", byIRN, err)
	}
	other := key
	other.Number = "CH1/26-27/99999"
	if _, err := c.Lookup(ctx, other); kindOf(t, err) != einvoice.KindNotFound {
		t.Errorf("Lookup of an unregistered document = %v; want not_found", err)
	}
	env.Server.Advance(49 * time.Hour)
	if _, err := c.Get(ctx, seller, reg.IRN); kindOf(t, err) != einvoice.KindGone {
		t.Errorf("Get after 49h = %v; want gone", err)
	}
	// The details are gone, the registration is not: RegisterOnce makes a
	// partial registration from the duplicate's InfoDtls.
	partial, err := einvoice.RegisterOnce(ctx, c, p)
	if err != nil || partial.IRN != reg.IRN || partial.AckNo != reg.AckNo || !partial.Partial() {
		t.Errorf("RegisterOnce after 49h = %+v, %v; want a partial registration of %s", partial, err, reg.IRN)
	}
}

// TestCancel cancels within 24 hours and is refused as the IRP refuses:
// twice (9999), after 24 hours (2270), with an active e-way bill (2230).
func TestCancel(t *testing.T) {
	t.Parallel()
	env, c := setup(t, 5*time.Second)
	ctx := t.Context()
	cancel := func(irn string) (*einvoice.Cancellation, error) {
		return c.Cancel(ctx, seller, einvoice.CancelRequest{IRN: irn, Reason: einvoice.CancelDataEntry, Remark: "Wrong buyer"})
	}
	a, b, late := register(t, c, einvoicetest.Payload(t, 10, buyer)), register(t, c, einvoicetest.Payload(t, 11, buyer)), register(t, c, einvoicetest.Payload(t, 12, buyer))
	got, err := cancel(a.IRN)
	if err != nil || got.IRN != a.IRN || time.Since(got.CancelDate) > time.Minute {
		t.Fatalf("Cancel = %+v, %v", got, err)
	}
	if _, err := cancel(a.IRN); kindOf(t, err) != einvoice.KindNotActive {
		t.Errorf("second Cancel = %v; want not_active", err)
	}
	if err := env.Server.SetEWayBill(b.IRN, true); err != nil {
		t.Fatal(err)
	}
	if _, err := cancel(b.IRN); kindOf(t, err) != einvoice.KindEWayBillActive {
		t.Errorf("Cancel with an e-way bill = %v; want e_way_bill_active", err)
	}
	env.Server.Advance(24*time.Hour + time.Minute)
	if _, err := cancel(late.IRN); kindOf(t, err) != einvoice.KindCancelWindowClosed {
		t.Errorf("Cancel after 24h = %v; want cancel_window_closed", err)
	}
	if _, err := c.Cancel(ctx, seller, einvoice.CancelRequest{IRN: late.IRN, Reason: 5, Remark: "x"}); kindOf(t, err) != einvoice.KindRejected {
		t.Errorf("Cancel with reason 5 = %v; want rejected", err)
	}
	status := map[string]string{}
	for _, r := range env.Server.Registrations(seller) {
		status[r.IRN] = r.Status
	}
	if status[a.IRN] != "CNL" || status[b.IRN] != "ACT" || status[late.IRN] != "ACT" {
		t.Errorf("statuses %v", status)
	}
	if got, err := c.Get(ctx, seller, a.IRN); err != nil || got.Status != einvoice.IRNCancelled {
		t.Errorf("Get of the cancelled IRN = %+v, %v; want status CNL", got, err)
	}
}

// TestRefusedBeforeSending: a payload that breaks the schema is refused
// by the client, and nothing reaches the IRP.
func TestRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	env, c := setup(t, 5*time.Second)
	p := einvoicetest.Payload(t, 4, buyer)
	p.ItemList[0].PrdDesc = "Ox"
	_, err := c.Register(t.Context(), p)
	if kindOf(t, err) != einvoice.KindRejected || !errors.Is(err, einvoice.ErrInvalidPayload) {
		t.Errorf("Register = %v; want rejected, ErrInvalidPayload", err)
	}
	if n := env.Server.Calls(einvoice.OpRegister) + env.Server.Calls(einvoice.OpAuth); n != 0 {
		t.Errorf("the sandbox got %d requests", n)
	}
}

// TestBusinessRuleRefusal: the IRP refuses a payload that holds against the
// schema but not its rules; the client reports its codes, rejected.
func TestBusinessRuleRefusal(t *testing.T) {
	t.Parallel()
	env, c := setup(t, 5*time.Second)
	p := einvoicetest.Payload(t, 5, buyer) // inter-state: IGST
	p.ItemList[0].CgstAmt, p.ItemList[0].SgstAmt = einvoice.NumString("0.5"), einvoice.NumString("0.5")
	_, err := c.Register(t.Context(), p)
	var e *einvoice.Error
	if !errors.As(err, &e) || e.Kind != einvoice.KindRejected || !e.HasCode("2174") {
		t.Errorf("Register = %v; want rejected with 2174", err)
	}
	if rs := env.Server.Registrations(""); len(rs) != 0 {
		t.Errorf("the sandbox registered %+v", rs)
	}
}

// TestAuthentication: the client authenticates once per token, renews a
// token the IRP refuses (1005) and asks again, renews before expiry, and
// reports refused credentials as auth.
func TestAuthentication(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	env := sandboxtest.Start(t, irpsandbox.Config{Now: clock})
	cfg := env.ClientConfig(t, 5*time.Second)
	cfg.Now = clock
	c := sandboxtest.Client(t, cfg)
	ctx := t.Context()
	key, _ := einvoice.KeyOf(einvoicetest.Payload(t, 6, buyer))
	lookup := func() {
		t.Helper()
		if _, err := c.Lookup(ctx, key); kindOf(t, err) != einvoice.KindNotFound {
			t.Fatalf("Lookup = %v; want not_found (an answer of the IRP)", err)
		}
	}
	lookup()
	lookup()
	if n := env.Server.Calls(einvoice.OpAuth); n != 1 {
		t.Errorf("%d authentications for two calls; want 1", n)
	}
	env.Server.ExpireTokens()
	lookup() // 1005, authenticate, ask again
	if n, l := env.Server.Calls(einvoice.OpAuth), env.Server.Calls(einvoice.OpLookup); n != 2 || l != 4 {
		t.Errorf("after the IRP dropped the token: %d authentications, %d lookups; want 2, 4", n, l)
	}
	advance(55 * time.Minute) // within 10 minutes of the 60-minute expiry
	lookup()
	if n := env.Server.Calls(einvoice.OpAuth); n != 3 {
		t.Errorf("%d authentications; want a renewal before expiry (3)", n)
	}
	s, err := c.Authenticate(ctx, seller)
	if err != nil || s.UserName != irpsandbox.DefaultUser || !s.Expiry.After(clock()) {
		t.Errorf("Authenticate = %+v, %v", s, err)
	}

	for _, bad := range []struct {
		name string
		edit func(*irp.Config)
	}{
		{"password", func(c *irp.Config) {
			c.Credentials = irp.Users(irp.Credentials{UserName: irpsandbox.DefaultUser, Password: "wrong"}, nil)
		}},
		{"client secret", func(c *irp.Config) { c.ClientSecret = "wrong" }},
		{"no user for the GSTIN", func(c *irp.Config) {
			c.Credentials = irp.Users(irp.Credentials{}, map[string]irp.Credentials{buyer: {UserName: "sandbox", Password: "sandbox"}})
		}},
		{"public key", func(c *irp.Config) { c.PublicKey = c.SigningKey }},
	} {
		cfg := env.ClientConfig(t, 5*time.Second)
		bad.edit(&cfg)
		_, err := sandboxtest.Client(t, cfg).Lookup(ctx, key)
		var e *einvoice.Error
		if !errors.As(err, &e) || e.Kind != einvoice.KindAuth || e.Op != einvoice.OpAuth {
			t.Errorf("%s: Lookup = %v; want auth", bad.name, err)
		}
	}
}

// TestUnverifiableAnswerIsUnknown: an answer whose signature does not check
// against the configured certificate is not trusted — but the IRP may
// have registered, so it is unknown, never "not done".
func TestUnverifiableAnswerIsUnknown(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Start(t, irpsandbox.Config{})
	cfg := env.ClientConfig(t, 5*time.Second)
	cfg.SigningKey = cfg.PublicKey // the wrong certificate
	_, err := sandboxtest.Client(t, cfg).Register(t.Context(), einvoicetest.Payload(t, 7, buyer))
	if kindOf(t, err) != einvoice.KindUnknown {
		t.Errorf("Register = %v; want unknown", err)
	}
	if rs := env.Server.Registrations(seller); len(rs) != 1 {
		t.Errorf("the sandbox holds %d registrations; want 1 (it registered)", len(rs))
	}
}

// TestUnreachableIsUnavailable: no connection, nothing sent, not done.
func TestUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	env := sandboxtest.Start(t, irpsandbox.Config{})
	dead := httptest.NewServer(nil)
	dead.Close()
	cfg := env.ClientConfig(t, 5*time.Second)
	cfg.BaseURL = dead.URL
	_, err := sandboxtest.Client(t, cfg).Register(t.Context(), einvoicetest.Payload(t, 8, buyer))
	if k := kindOf(t, err); k != einvoice.KindUnavailable || k.Outcome() != einvoice.OutcomeNotDone {
		t.Errorf("Register = %v; want unavailable", err)
	}
}
