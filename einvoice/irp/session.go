package irp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/invoiced/invoiced/einvoice"
)

// A session is one GSTIN's authentication: the IRP's token and the session
// key (SEK) that encrypts its calls. Sessions live in memory; each process
// authenticates for itself (the IRP answers a second authentication within
// a token's life with the same token).

// fallbackTokenLife is how long a token is trusted when the IRP's answer
// does not say (TokenExpiry missing or unreadable): less than the
// sandbox's 60 minutes, the shortest the IRP documents.
const fallbackTokenLife = 50 * time.Minute

// expiryMargin is how long before its expiry a token the IRP would not
// renew early is still used.
const expiryMargin = 30 * time.Second

// session is one GSTIN's current token; mu is held while authenticating,
// so that concurrent calls of a GSTIN wait for one authentication.
type session struct {
	mu        sync.Mutex
	tok       *token // nil: none held
	refreshAt time.Time
}

// token is what calls need of a session.
type token struct {
	value  string
	sek    []byte
	user   string
	expiry time.Time
}

// Session describes an authentication, for Authenticate's caller.
type Session struct {
	GSTIN    string
	UserName string
	Expiry   time.Time
}

// Authenticate authenticates gstin's API user afresh and returns the
// session's description: a check of the configuration. It fails with an
// *einvoice.Error of KindAuth when the IRP refuses the credentials or none
// are configured for gstin, and KindUnavailable when it cannot be reached.
func (c *Client) Authenticate(ctx context.Context, gstin string) (Session, error) {
	s := c.sessionOf(gstin)
	s.mu.Lock()
	s.tok = nil
	s.mu.Unlock()
	tok, err := c.token(ctx, gstin)
	if err != nil {
		return Session{}, err
	}
	return Session{GSTIN: gstin, UserName: tok.user, Expiry: tok.expiry}, nil
}

// sessionOf returns gstin's session, making it on first use.
func (c *Client) sessionOf(gstin string) *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[gstin]
	if s == nil {
		s = &session{}
		c.sessions[gstin] = s
	}
	return s
}

// token returns gstin's token, authenticating when none is held or it is
// due for renewal (RefreshBefore its expiry: then the IRP is asked for a
// new one, ForceRefreshAccessToken).
func (c *Client) token(ctx context.Context, gstin string) (token, error) {
	s := c.sessionOf(gstin)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := c.cfg.Now()
	if s.tok != nil && now.Before(s.refreshAt) {
		return *s.tok, nil
	}
	force := s.tok != nil && now.Before(s.tok.expiry)
	tok, err := c.authenticate(ctx, gstin, force)
	if err != nil {
		return token{}, err
	}
	s.tok = &tok
	s.refreshAt = tok.expiry.Add(-c.cfg.RefreshBefore)
	if !s.refreshAt.After(now) {
		// The IRP kept the token (it renews only in the last minutes):
		// use it to the end.
		s.refreshAt = tok.expiry.Add(-expiryMargin)
	}
	return tok, nil
}

// forget drops gstin's token when it is still value (the IRP refused it),
// so that the next call authenticates.
func (c *Client) forget(gstin, value string) {
	s := c.sessionOf(gstin)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tok != nil && s.tok.value == value {
		s.tok = nil
	}
}

// authenticate asks the IRP for a token for gstin's API user. No document
// is sent, so every failure says "not done": KindAuth when the IRP refuses
// (or no user is configured), KindUnavailable otherwise.
func (c *Client) authenticate(ctx context.Context, gstin string, force bool) (token, error) {
	fail := func(kind einvoice.Kind, status int, details []einvoice.ErrorDetail, err error) (token, error) {
		return token{}, &einvoice.Error{Op: einvoice.OpAuth, Kind: kind, HTTPStatus: status, Details: details, Err: err}
	}
	creds, ok := c.cfg.Credentials(gstin)
	if !ok {
		return fail(einvoice.KindAuth, 0, nil, fmt.Errorf("no IRP API user is configured for GSTIN %s", gstin))
	}
	appKey := make([]byte, KeySize)
	if _, err := rand.Read(appKey); err != nil {
		return fail(einvoice.KindUnavailable, 0, nil, err)
	}
	plain, err := json.Marshal(AuthPayload{UserName: creds.UserName, Password: creds.Password,
		AppKey: base64.StdEncoding.EncodeToString(appKey), ForceRefreshAccessToken: force})
	if err != nil {
		return fail(einvoice.KindAuth, 0, nil, err)
	}
	enc, err := encryptRSA(c.cfg.PublicKey, []byte(base64.StdEncoding.EncodeToString(plain)))
	if err != nil {
		return fail(einvoice.KindAuth, 0, nil, fmt.Errorf("encrypting the credentials with the IRP's public key (too long for it?): %w", err))
	}
	body, err := json.Marshal(Request{Data: base64.StdEncoding.EncodeToString(enc)})
	if err != nil {
		return fail(einvoice.KindAuth, 0, nil, err)
	}
	ans, status, err := c.send(ctx, einvoice.OpAuth, gstin, http.MethodPost, PathAuth, nil, http.Header{}, body)
	if err != nil {
		var e *einvoice.Error
		errors.As(err, &e)
		return fail(einvoice.KindUnavailable, e.HTTPStatus, nil, e.Err)
	}
	if ans.Status != 1 {
		return fail(einvoice.KindAuth, status, ans.ErrorDetails, nil)
	}
	var d AuthData
	if err := json.Unmarshal(ans.Data, &d); err != nil || d.AuthToken == "" {
		return fail(einvoice.KindUnavailable, status, nil, fmt.Errorf("authentication answer without a token: %v", err))
	}
	encSEK, err := base64.StdEncoding.DecodeString(d.Sek)
	if err != nil {
		return fail(einvoice.KindUnavailable, status, nil, fmt.Errorf("session key: %w", err))
	}
	sek, err := DecryptECB(appKey, encSEK)
	if err != nil || len(sek) != KeySize {
		return fail(einvoice.KindUnavailable, status, nil, fmt.Errorf("the session key does not decrypt to %d bytes with the app key: %v", KeySize, err))
	}
	expiry, err := ParseTime(d.TokenExpiry)
	if err != nil {
		expiry = c.cfg.Now().Add(fallbackTokenLife)
	}
	return token{value: d.AuthToken, sek: sek, user: creds.UserName, expiry: expiry}, nil
}
