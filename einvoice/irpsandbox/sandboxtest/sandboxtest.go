// Package sandboxtest starts an IRP sandbox for a test and gives the
// client configuration that reaches it, as an operator would configure
// invoiced for the IRP: its URL, the client id and secret, an API user, the
// public key and the signing certificate.
package sandboxtest

import (
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/einvoice/irp"
	"github.com/invoiced/invoiced/einvoice/irpsandbox"
)

// keys are generated once per test binary: two 2048-bit RSA keys take a
// second under -race, too long for every test.
var keys = sync.OnceValues(irpsandbox.GenerateKeys)

// Keys returns the test binary's sandbox keys. It fails the test when they
// cannot be generated.
func Keys(t testing.TB) irpsandbox.Keys {
	t.Helper()
	k, err := keys()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Env is a running sandbox.
type Env struct {
	Server *irpsandbox.Server
	URL    string // the base URL, http://127.0.0.1:PORT
	keys   irpsandbox.Keys
}

// Start starts a sandbox for cfg on 127.0.0.1:0 and stops it when the test
// ends. Zero Keys in cfg mean the test binary's keys (Keys).
func Start(t testing.TB, cfg irpsandbox.Config) *Env {
	t.Helper()
	if cfg.Keys.Encryption == nil {
		cfg.Keys = Keys(t)
	}
	s, err := irpsandbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return &Env{Server: s, URL: hs.URL, keys: cfg.Keys}
}

// ClientConfig returns the configuration of an irp.Client that reaches the
// sandbox with its default credentials, waiting at most timeout for an
// answer. The keys are read from the PEM files the sandbox publishes, as
// an operator configures them.
func (e *Env) ClientConfig(t testing.TB, timeout time.Duration) irp.Config {
	t.Helper()
	pub, err := irp.ParsePublicKey(e.keys.PublicKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := irp.ParsePublicKey(e.keys.CertificatePEM())
	if err != nil {
		t.Fatal(err)
	}
	return irp.Config{
		BaseURL:      e.URL,
		ClientID:     irpsandbox.DefaultClientID,
		ClientSecret: irpsandbox.DefaultClientSecret,
		Credentials:  irp.Users(irp.Credentials{UserName: irpsandbox.DefaultUser, Password: irpsandbox.DefaultPassword}, nil),
		PublicKey:    pub,
		SigningKey:   cert,
		Timeout:      timeout,
	}
}

// Client returns an irp.Client for cfg (ClientConfig, perhaps changed). It
// fails the test when irp.New refuses cfg.
func Client(t testing.TB, cfg irp.Config) *irp.Client {
	t.Helper()
	c, err := irp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
