package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
)

// This file holds the sessions and signing in and out: the cookies, the
// session a request carries, and the sign-in, sign-out and purge.

// Session lifetimes.
const (
	IdleTimeout     = 30 * time.Minute
	AbsoluteTimeout = 12 * time.Hour
	// touchEvery is how stale last_seen_at may get before a request
	// rewrites it: a session's idle expiry is exact to this much, and a
	// page view writes at most once a minute.
	touchEvery = time.Minute
)

// CookieName is the session cookie.
const CookieName = "invoiced_session"

// loginCookie holds the sign-in form's token (double submit): a POST to
// /console/login must carry the same value in its login_token field. A
// cross-site page can neither read the cookie nor (SameSite=Strict) make
// the browser send it, so it cannot sign a victim in as the attacker's
// seller (login CSRF).
const loginCookie = "invoiced_login"

// session is a signed-in request's session.
type session struct {
	idHash    []byte
	csrf      string
	principal apikey.Principal
}

type sessionKey struct{}

// sessionOf returns the request's session (set by authenticate).
func sessionOf(r *http.Request) *session { return r.Context().Value(sessionKey{}).(*session) }

// errSignedOut refuses a request without a live session: refuse sends a
// GET to the sign-in page and refuses anything else (403).
var errSignedOut = errors.New("console: no live session")

// staleForm refuses a POST of session s that does not carry the
// session's csrf_token field (403).
type staleForm struct{ s *session }

func (staleForm) Error() string { return "console: the form's security token is missing or stale" }

// authenticate is the console's api.Authenticator (GuardAuth): it returns
// the principal of the request's live session, whose key is still valid,
// and the request with the session in its context (sessionOf). It fails
// with errSignedOut when there is no such session, with staleForm for a
// POST without the session's csrf_token, and as lookup does.
func (c *Console) authenticate(_ http.ResponseWriter, r *http.Request) (*http.Request, apikey.Principal, error) {
	s, err := c.lookup(r)
	if err != nil {
		return r, apikey.Principal{}, err
	}
	if s == nil {
		return r, apikey.Principal{}, errSignedOut
	}
	if r.Method == http.MethodPost {
		got := r.PostFormValue("csrf_token")
		if subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
			return r, apikey.Principal{}, staleForm{s}
		}
	}
	return r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)), s.principal, nil
}

// refuse answers a request a guard refused with err: a GET without a
// session is sent to sign in; other refusals are error pages (fail), with
// the session when the guards had found it.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, err error) {
	var stale staleForm
	switch {
	case errors.Is(err, errSignedOut) && r.Method == http.MethodGet:
		http.Redirect(w, r, "/console/login", http.StatusSeeOther)
	case errors.Is(err, errSignedOut):
		c.page(w, r, http.StatusForbidden, "error", nil, "Signed out", errorView{Message: "Your session has ended. Sign in again."})
	case errors.As(err, &stale):
		c.page(w, r, http.StatusForbidden, "error", stale.s, "Forbidden", errorView{Message: "The form is missing its security token or it is stale. Go back, reload the page and try again."})
	default:
		s, _ := r.Context().Value(sessionKey{}).(*session)
		c.fail(w, r, s, err)
	}
}

// lookup returns the request's live session, or nil when there is none
// (no cookie, unknown, expired, or its key revoked). A cookie costs a
// database lookup, so it is looked up within the client address's
// failure budget, as an API key is (api.Server.FailureAllowed): one that
// names no live session spends a failure, and an address that has spent
// them gets a rate_limited error (429) before any lookup. Made-up cookies
// used to cost a lookup each, without limit.
func (c *Console) lookup(r *http.Request) (*session, error) {
	ck, err := r.Cookie(CookieName)
	if err != nil || ck.Value == "" {
		return nil, nil
	}
	id, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || len(id) != 32 {
		return nil, nil
	}
	if err := c.keys.FailureAllowed(r); err != nil {
		return nil, err
	}
	hash := sha256.Sum256(id)
	now := c.now()
	ctx := r.Context()
	row, found, err := liveSession(ctx, c.pool, hash[:], now.Add(-IdleTimeout), now.Add(-AbsoluteTimeout))
	if err != nil {
		return nil, err
	}
	if !found {
		c.keys.ChargeFailure(r)
		return nil, nil
	}
	p, err := c.keys.KeyPrincipal(ctx, row.KeyPrefix)
	if errors.Is(err, apikey.ErrUnauthorized) || err == nil && p.Seller.ID != row.SellerID {
		return nil, deleteSession(ctx, c.pool, hash[:])
	}
	if err != nil {
		return nil, err
	}
	if now.Sub(row.LastSeen) > touchEvery {
		if err := touchSession(ctx, c.pool, hash[:], now); err != nil {
			return nil, err
		}
	}
	api.NoteSeller(ctx, string(p.Seller.GSTIN))
	return &session{idHash: hash[:], csrf: row.CSRF, principal: p}, nil
}

// loginForm serves GET /console/login: the form, with a fresh token in
// the form and in its cookie.
func (c *Console) loginForm(w http.ResponseWriter, r *http.Request) {
	if s, err := c.lookup(r); err == nil && s != nil {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
		return
	}
	c.loginPage(w, r, http.StatusOK, "")
}

// loginPage renders the sign-in form with status and message msg, and
// sets a fresh form token.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	token := base64.RawURLEncoding.EncodeToString(random(32))
	http.SetCookie(w, &http.Cookie{
		Name: loginCookie, Value: token, Path: "/console/login",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.cookieSecure || r.TLS != nil,
		MaxAge: int(AbsoluteTimeout / time.Second),
	})
	c.page(w, r, status, "login", nil, "Sign in", loginView{Error: msg, Token: token})
}

// sameOrigin reports whether r's Origin header, when it has one, names
// the host r was sent to. Browsers send Origin on every cross-site POST.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// login serves POST /console/login (fields key and login_token): a valid
// key starts a session and redirects to the overview; a wrong one shows
// the form again with 401. A POST without the form's token, or from
// another origin, is 403 and starts nothing.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	ck, err := r.Cookie(loginCookie)
	if !sameOrigin(r) || err != nil || ck.Value == "" ||
		subtle.ConstantTimeCompare([]byte(r.PostFormValue("login_token")), []byte(ck.Value)) != 1 {
		c.loginPage(w, r, http.StatusForbidden, "The sign-in form was stale or sent from another site. Sign in again here.")
		return
	}
	key := strings.TrimSpace(r.PostFormValue("key"))
	p, err := c.keys.Authenticate(r, key)
	if err == nil && p.Series != nil {
		// The console shows every series of the seller; a key restricted
		// to some (a terminal's) may not see the others.
		c.loginPage(w, r, http.StatusForbidden, "That API key is restricted to series "+strings.Join(p.Series, ", ")+"; the console needs a key for every series of the seller.")
		return
	}
	if errors.Is(err, apikey.ErrUnauthorized) {
		c.loginPage(w, r, http.StatusUnauthorized, "That API key is not valid (unknown, revoked or mistyped).")
		return
	}
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	api.NoteSeller(r.Context(), string(p.Seller.GSTIN))
	id, csrf := random(32), random(32)
	hash := sha256.Sum256(id)
	now := c.now()
	row := sessionRow{SellerID: p.Seller.ID, KeyPrefix: p.Prefix, CSRF: base64.RawURLEncoding.EncodeToString(csrf), CreatedAt: now, LastSeen: now}
	if err := insertSession(r.Context(), c.pool, hash[:], row); err != nil {
		c.fail(w, r, nil, err)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: base64.RawURLEncoding.EncodeToString(id), Path: "/console/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.cookieSecure || r.TLS != nil,
		MaxAge: int(AbsoluteTimeout / time.Second),
	})
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

// logout serves POST /console/logout: it deletes the session and the cookie.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if err := deleteSession(r.Context(), c.pool, sessionOf(r).idHash); err != nil {
		c.fail(w, r, nil, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/console/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.cookieSecure || r.TLS != nil})
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}

// PurgeSessions deletes expired sessions and returns how many; serve runs
// it now and then.
func (c *Console) PurgeSessions(ctx context.Context) (int64, error) {
	now := c.now()
	return purgeSessions(ctx, c.pool, now.Add(-IdleTimeout), now.Add(-AbsoluteTimeout))
}

func random(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand documents it)
	return b
}
