package irp

import (
	"cmp"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Credentials are an API user of the IRP: each GSTIN has its own, created
// on the e-invoice portal for API integration.
type Credentials struct {
	UserName string
	Password string
}

// Config is what a Client needs. BaseURL, ClientID, ClientSecret,
// PublicKey, SigningKey and Credentials are required; the rest have
// defaults.
type Config struct {
	// BaseURL is the IRP's API root, such as https://einv-apisandbox.nic.in.
	BaseURL string
	// ClientID and ClientSecret identify the integrator (sent as headers).
	ClientID     string
	ClientSecret string
	// Credentials returns the API user of a supplier GSTIN, and false when
	// none is configured for it.
	Credentials func(gstin string) (Credentials, bool)
	// PublicKey is the IRP's encryption key (the password and app key are
	// encrypted with it); SigningKey verifies its signed invoices and QR
	// codes. They are different keys.
	PublicKey  *rsa.PublicKey
	SigningKey *rsa.PublicKey
	// HTTPClient sends the requests; nil means one with Timeout.
	HTTPClient *http.Client
	// Timeout bounds each call when HTTPClient is nil (default 30s).
	Timeout time.Duration
	// RefreshBefore is how long before its expiry a token is renewed
	// (default 10 minutes, the window in which the IRP issues a new one).
	RefreshBefore time.Duration
	// Now is the clock that judges token expiry (default time.Now).
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultTimeout       = 30 * time.Second
	DefaultRefreshBefore = 10 * time.Minute
	// MaxAnswer bounds an answer's body: a signed invoice of a thousand
	// lines is a few megabytes.
	MaxAnswer = 16 << 20
)

// withDefaults returns c with its zero optional fields filled, and an error
// naming the first required field missing or the base URL when it is not
// an http(s) URL.
func (c Config) withDefaults() (Config, error) {
	u, err := url.Parse(c.BaseURL)
	switch {
	case c.BaseURL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return c, fmt.Errorf("irp: base URL %q is not an http(s) URL", c.BaseURL)
	case c.ClientID == "" || c.ClientSecret == "":
		return c, errors.New("irp: client id and client secret are required")
	case c.Credentials == nil:
		return c, errors.New("irp: credentials are required")
	case c.PublicKey == nil:
		return c, errors.New("irp: the IRP's public key is required")
	case c.SigningKey == nil:
		return c, errors.New("irp: the IRP's signing certificate is required")
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.RefreshBefore = cmp.Or(c.RefreshBefore, DefaultRefreshBefore)
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: c.Timeout}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

// Users returns a Credentials function: users[gstin] when set, else def
// when its user name is set.
func Users(def Credentials, users map[string]Credentials) func(string) (Credentials, bool) {
	return func(gstin string) (Credentials, bool) {
		if c, ok := users[gstin]; ok {
			return c, true
		}
		return def, def.UserName != ""
	}
}
