package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/invoiced/invoiced/einvoice/irpsandbox"
)

// runIRPSandbox serves a local IRP (package einvoice/irpsandbox) until ctx
// is cancelled: for tests, CI and the demo. It prints "listening on
// http://ADDR" on stdout once bound, and on stderr the files and
// credentials serve needs to reach it. It fails for bad flags, keys that
// cannot be read or written, or an address that cannot be bound.
func runIRPSandbox(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "irp-sandbox", "[--addr HOST:PORT] [--keys DIR] [--client-id ID --client-secret S --user-name U --password P]")
	addr := fs.String("addr", "127.0.0.1:8400", "address to listen on (port 0 picks a free port; the bound address is printed)")
	keys := fs.String("keys", "", "directory of the sandbox's keys: generated there when missing, reused otherwise (public-key.pem and signing-cert.pem are what serve's --irp-public-key and --irp-signing-cert name); empty: new keys in memory, served at /sandbox/public-key and /sandbox/certificate")
	clientID := fs.String("client-id", irpsandbox.DefaultClientID, "the client id it accepts")
	clientSecret := fs.String("client-secret", irpsandbox.DefaultClientSecret, "the client secret it accepts")
	user := fs.String("user-name", irpsandbox.DefaultUser, "the API user it accepts, for any GSTIN")
	password := fs.String("password", irpsandbox.DefaultPassword, "that user's password")
	tokenLife := fs.Duration("token-life", irpsandbox.DefaultTokenLife, "how long a token lives (the IRP's sandbox: 60m; production: 6h)")
	seed := fs.Uint64("seed", 0, "seed of the faults' random draws (faults are set at POST /sandbox/faults); 0: from the clock")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *tokenLife <= 0 {
		return usageErrorf("irp-sandbox: --token-life must be positive")
	}
	var k irpsandbox.Keys
	var err error
	if *keys != "" {
		k, err = irpsandbox.LoadOrCreateKeys(*keys)
	} else {
		k, err = irpsandbox.GenerateKeys()
	}
	if err != nil {
		return fmt.Errorf("irp-sandbox: keys: %w", err)
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	s, err := irpsandbox.New(irpsandbox.Config{Keys: k, ClientID: *clientID, ClientSecret: *clientSecret,
		Users: map[string]string{*user: *password}, TokenLife: *tokenLife, Seed: *seed})
	if err != nil {
		return fmt.Errorf("irp-sandbox: %w", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("irp-sandbox: %w", err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	if *keys != "" {
		fmt.Fprintf(e.stderr, "irp-sandbox: keys in %s: --irp-public-key %s --irp-signing-cert %s\n", *keys,
			filepath.Join(*keys, irpsandbox.FilePublicKey), filepath.Join(*keys, irpsandbox.FileSigningCert))
	} else {
		fmt.Fprintf(e.stderr, "irp-sandbox: keys in memory: %s/sandbox/public-key and %s/sandbox/certificate\n", base, base)
	}
	fmt.Fprintf(e.stderr, "irp-sandbox: --irp-client-id %s --irp-user-name %s (faults seed %d); not the IRP: nothing registered here counts\n", *clientID, *user, *seed)
	fmt.Fprintf(e.stdout, "listening on %s\n", base)
	select {
	case err := <-served:
		return fmt.Errorf("irp-sandbox: %w", err)
	case <-ctx.Done():
	}
	// Delayed answers (faults) hold their connections; give them a moment,
	// then close.
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(stop); err != nil {
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("irp-sandbox: %w", err)
	}
	return nil
}
