package irp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/invoiced/invoiced/einvoice"
)

// Client speaks the IRP's protocol for any number of supplier GSTINs, each
// with its own session. It is safe for concurrent use.
type Client struct {
	cfg Config

	mu       sync.Mutex
	sessions map[string]*session // by GSTIN
}

var _ einvoice.Registrar = (*Client)(nil)

// New returns a client for cfg. It fails when a required field of cfg is
// missing (Config says which are).
func New(cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, sessions: map[string]*session{}}, nil
}

// Register asks the IRP to register p (einvoice.Registrar). The payload is
// checked against the schema first: a payload that breaks it is
// KindRejected, wrapping einvoice.ErrInvalidPayload, and nothing is sent.
// A registration whose signed invoice is not p's document is KindMismatch.
func (c *Client) Register(ctx context.Context, p *einvoice.Payload) (*einvoice.Registration, error) {
	body, err := einvoice.Marshal(p)
	if err != nil {
		return nil, &einvoice.Error{Op: einvoice.OpRegister, Kind: einvoice.KindRejected, Err: err}
	}
	var d IRNData
	if err := c.call(ctx, einvoice.OpRegister, p.SellerDtls.Gstin, http.MethodPost, PathInvoice, nil, body, &d); err != nil {
		return nil, err
	}
	reg, err := c.registration(einvoice.OpRegister, d)
	if err != nil {
		return nil, err
	}
	if err := einvoice.Matches(reg, p); err != nil {
		return nil, err
	}
	return reg, nil
}

// Lookup returns the registration of document k (einvoice.Registrar): the
// IRP's get-IRN-by-document-details.
func (c *Client) Lookup(ctx context.Context, k einvoice.DocKey) (*einvoice.Registration, error) {
	q := url.Values{"doctype": {string(k.Type)}, "docnum": {k.Number}, "docdate": {einvoice.FormatDate(k.Date)}}
	var d IRNData
	if err := c.call(ctx, einvoice.OpLookup, k.GSTIN, http.MethodGet, PathByDocument, q, nil, &d); err != nil {
		return nil, err
	}
	return c.registration(einvoice.OpLookup, d)
}

// Get returns the registration of irn (einvoice.Registrar): the IRP's
// get-e-invoice-by-IRN.
func (c *Client) Get(ctx context.Context, gstin, irn string) (*einvoice.Registration, error) {
	var d IRNData
	if err := c.call(ctx, einvoice.OpGet, gstin, http.MethodGet, PathByIRN+url.PathEscape(irn), nil, nil, &d); err != nil {
		return nil, err
	}
	return c.registration(einvoice.OpGet, d)
}

// Cancel cancels r.IRN (einvoice.Registrar). A reason other than the four
// or a remark of no or more than einvoice.MaxCancelRemark characters is
// KindRejected, and nothing is sent.
func (c *Client) Cancel(ctx context.Context, gstin string, r einvoice.CancelRequest) (*einvoice.Cancellation, error) {
	if n := len([]rune(r.Remark)); !r.Reason.Valid() || n == 0 || n > einvoice.MaxCancelRemark {
		return nil, &einvoice.Error{Op: einvoice.OpCancel, Kind: einvoice.KindRejected,
			Err: fmt.Errorf("a cancel needs a reason from 1 to 4 (got %d) and a remark of 1 to %d characters (got %d)", int(r.Reason), einvoice.MaxCancelRemark, n)}
	}
	body, err := json.Marshal(CancelPayload{Irn: r.IRN, CnlRsn: fmt.Sprint(int(r.Reason)), CnlRem: r.Remark})
	if err != nil {
		return nil, err
	}
	var d CancelData
	if err := c.call(ctx, einvoice.OpCancel, gstin, http.MethodPost, PathCancel, nil, body, &d); err != nil {
		return nil, err
	}
	at, err := ParseTime(d.CancelDate)
	if err != nil || d.Irn != r.IRN {
		return nil, &einvoice.Error{Op: einvoice.OpCancel, Kind: einvoice.KindUnknown,
			Err: fmt.Errorf("the answer names IRN %q cancelled at %q: %v", d.Irn, d.CancelDate, err)}
	}
	return &einvoice.Cancellation{IRN: d.Irn, CancelDate: at}, nil
}

// registration returns d as a registration, its signed invoice and QR
// code verified. An answer that does not verify or parse is KindUnknown:
// the IRP may have registered the document, and a lookup will tell.
func (c *Client) registration(op einvoice.Op, d IRNData) (*einvoice.Registration, error) {
	at, err := ParseTime(d.AckDt)
	if err != nil || d.Irn == "" || d.AckNo == "" {
		return nil, &einvoice.Error{Op: op, Kind: einvoice.KindUnknown, Err: fmt.Errorf("answer without IRN, AckNo or AckDt (%q, %q, %q)", d.Irn, d.AckNo, d.AckDt)}
	}
	reg := &einvoice.Registration{IRN: d.Irn, AckNo: string(d.AckNo), AckDate: at, Status: einvoice.IRNStatus(d.Status),
		SignedInvoice: d.SignedInvoice, SignedQRCode: d.SignedQRCode}
	if err := verifyRegistration(reg, c.cfg.SigningKey); err != nil {
		return nil, &einvoice.Error{Op: op, Kind: einvoice.KindUnknown, Err: err}
	}
	return reg, nil
}

// codeInvalidToken is the IRP's answer to a token it does not accept.
const codeInvalidToken = "1005"

// call sends plain (nil for none), encrypted with gstin's session key, to
// method path?query, and decodes the decrypted answer into out. A token
// the IRP refuses (1005) is renewed and the call sent once more. It
// returns an *einvoice.Error classified by what is known of the outcome.
func (c *Client) call(ctx context.Context, op einvoice.Op, gstin, method, path string, query url.Values, plain []byte, out any) error {
	for renewed := false; ; renewed = true {
		tok, err := c.token(ctx, gstin)
		if err != nil {
			return err
		}
		var body []byte
		if plain != nil {
			ct, err := EncryptECB(tok.sek, plain)
			if err != nil {
				return err
			}
			if body, err = json.Marshal(Request{Data: base64.StdEncoding.EncodeToString(ct)}); err != nil {
				return err
			}
		}
		h := http.Header{}
		h[HeaderUserName] = []string{tok.user}
		h[HeaderAuthToken] = []string{tok.value}
		ans, status, err := c.send(ctx, op, gstin, method, path, query, h, body)
		if err != nil {
			return err
		}
		if ans.Status == 1 {
			if err := decryptData(ans.Data, tok.sek, out); err != nil {
				return &einvoice.Error{Op: op, Kind: einvoice.KindUnknown, HTTPStatus: status, Err: err}
			}
			return nil
		}
		e := answerError(op, status, ans)
		if e.HasCode(codeInvalidToken) && !renewed {
			c.forget(gstin, tok.value)
			continue
		}
		return e
	}
}

// send does one HTTP exchange and returns the IRP's answer and its status
// code. It fails with KindUnavailable when the request was not written
// (nothing reached the IRP), and KindUnknown when it was but no answer
// arrived or the answer is not the IRP's envelope.
func (c *Client) send(ctx context.Context, op einvoice.Op, gstin, method, path string, query url.Values, h http.Header, body []byte) (*Answer, int, error) {
	u := c.cfg.BaseURL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) }})
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, 0, &einvoice.Error{Op: op, Kind: einvoice.KindUnavailable, Err: err}
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header[HeaderClientID] = []string{c.cfg.ClientID}
	req.Header[HeaderClientSecret] = []string{c.cfg.ClientSecret}
	req.Header[HeaderGSTIN] = []string{gstin}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		kind := einvoice.KindUnknown
		if !wrote.Load() {
			kind = einvoice.KindUnavailable
		}
		return nil, 0, &einvoice.Error{Op: op, Kind: kind, Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	if err == nil && len(raw) > MaxAnswer {
		err = fmt.Errorf("answer larger than %d bytes", MaxAnswer)
	}
	if err != nil {
		return nil, resp.StatusCode, &einvoice.Error{Op: op, Kind: einvoice.KindUnknown, HTTPStatus: resp.StatusCode, Err: err}
	}
	var ans Answer
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, resp.StatusCode, &einvoice.Error{Op: op, Kind: einvoice.KindUnknown, HTTPStatus: resp.StatusCode,
			Err: fmt.Errorf("not an IRP answer: %w", err)}
	}
	if ans.Status == 0 && len(ans.ErrorDetails) == 0 && resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, &einvoice.Error{Op: op, Kind: einvoice.KindUnknown, HTTPStatus: resp.StatusCode,
			Err: errors.New("an error answer without ErrorDetails")}
	}
	return &ans, resp.StatusCode, nil
}

// answerError returns the error of ans, a failure answer of the IRP,
// classified by its codes; a duplicate carries what InfoDtls said of the
// registration the IRP keeps.
func answerError(op einvoice.Op, status int, ans *Answer) *einvoice.Error {
	e := &einvoice.Error{Op: op, Kind: einvoice.KindOfDetails(ans.ErrorDetails), Details: ans.ErrorDetails, HTTPStatus: status}
	if e.Kind != einvoice.KindDuplicate {
		return e
	}
	for _, info := range ans.InfoDtls {
		if info.InfCd != InfoDuplicate {
			continue
		}
		desc := info.Desc
		var s string
		if json.Unmarshal(desc, &s) == nil {
			desc = []byte(s) // a relay that sends the description as JSON text
		}
		var d DupDesc
		if json.Unmarshal(desc, &d) != nil || d.Irn == "" {
			continue
		}
		at, _ := ParseTime(d.AckDt)
		e.Duplicate = &einvoice.Duplicate{IRN: d.Irn, AckNo: string(d.AckNo), AckDate: at}
	}
	return e
}

// decryptData decodes data, a JSON string holding the answer encrypted with
// sek in base64, into out.
func decryptData(data json.RawMessage, sek []byte, out any) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil || s == "" {
		return fmt.Errorf("answer Data %.40s is not an encrypted string", data)
	}
	ct, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("answer Data: %w", err)
	}
	plain, err := DecryptECB(sek, ct)
	if err != nil {
		return fmt.Errorf("answer Data: %w", err)
	}
	if err := json.Unmarshal(plain, out); err != nil {
		return fmt.Errorf("answer Data: %w", err)
	}
	return nil
}
