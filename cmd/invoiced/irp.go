package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rsa"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/invoiced/invoiced/einvoice/irp"
	"github.com/invoiced/invoiced/gst"
)

// irpFlags are the IRP's endpoint and credentials, as flags and, through
// applyEnv, INVOICED_IRP_* variables (INVOICED_IRP_URL,
// INVOICED_IRP_PASSWORD, …). They are never stored in the database: the
// password and client secret live in the process's environment, the keys
// in files.
type irpFlags struct {
	url          string
	clientID     string
	clientSecret string
	userName     string
	password     string
	credentials  string // file: one "GSTIN USER PASSWORD" line per GSTIN
	publicKey    string // file: the IRP's encryption public key, PEM
	signingCert  string // file: the IRP's signing certificate, PEM
	timeout      time.Duration
}

// addIRPFlags defines the IRP flags on fs.
func addIRPFlags(fs *flag.FlagSet, f *irpFlags) {
	fs.StringVar(&f.url, "irp-url", "", "the IRP's API root (https://einv-apisandbox.nic.in, or `invoiced irp-sandbox`'s address); empty: e-invoicing off")
	fs.StringVar(&f.clientID, "irp-client-id", "", "the integrator's client id at the IRP")
	fs.StringVar(&f.clientSecret, "irp-client-secret", "", "the integrator's client secret (prefer the environment variable to the flag)")
	fs.StringVar(&f.userName, "irp-user-name", "", "the e-invoice API user, for every GSTIN not in --irp-credentials")
	fs.StringVar(&f.password, "irp-password", "", "its password (prefer the environment variable to the flag)")
	fs.StringVar(&f.credentials, "irp-credentials", "", "a file of API users per GSTIN, one `GSTIN USER PASSWORD` line each (# comments); readable by this user only")
	fs.StringVar(&f.publicKey, "irp-public-key", "", "PEM file of the IRP's public key, which encrypts the credentials")
	fs.StringVar(&f.signingCert, "irp-signing-cert", "", "PEM file of the IRP's signing certificate, which verifies signed invoices and QR codes")
	fs.DurationVar(&f.timeout, "irp-timeout", irp.DefaultTimeout, "longest wait for one IRP answer; a later answer is treated as lost (the registration is then looked up, never assumed absent)")
}

// config returns the client configuration f describes, and false when
// --irp-url is empty (e-invoicing is off). It fails with a *usageError
// naming the flag when another part is missing or a file cannot be read or
// parsed.
func (f irpFlags) config(cmd string) (irp.Config, bool, error) {
	if f.url == "" {
		return irp.Config{}, false, nil
	}
	var missing []string
	for _, r := range []struct{ name, v string }{
		{"--irp-client-id", f.clientID}, {"--irp-client-secret", f.clientSecret},
		{"--irp-public-key", f.publicKey}, {"--irp-signing-cert", f.signingCert},
	} {
		if r.v == "" {
			missing = append(missing, r.name)
		}
	}
	if f.userName == "" && f.credentials == "" {
		missing = append(missing, "--irp-user-name or --irp-credentials")
	}
	if len(missing) > 0 {
		return irp.Config{}, false, usageErrorf("%s: --irp-url needs %s", cmd, strings.Join(missing, ", "))
	}
	if f.timeout <= 0 {
		return irp.Config{}, false, usageErrorf("%s: --irp-timeout must be positive", cmd)
	}
	key := func(flagName, file string) (*rsa.PublicKey, error) {
		b, err := os.ReadFile(file)
		if err == nil {
			var k *rsa.PublicKey
			if k, err = irp.ParsePublicKey(b); err == nil {
				return k, nil
			}
		}
		return nil, usageErrorf("%s: %s %s: %v", cmd, flagName, file, err)
	}
	pub, err := key("--irp-public-key", f.publicKey)
	if err != nil {
		return irp.Config{}, false, err
	}
	cert, err := key("--irp-signing-cert", f.signingCert)
	if err != nil {
		return irp.Config{}, false, err
	}
	users := map[string]irp.Credentials{}
	if f.credentials != "" {
		if users, err = readIRPCredentials(f.credentials); err != nil {
			return irp.Config{}, false, usageErrorf("%s: --irp-credentials: %v", cmd, err)
		}
	}
	return irp.Config{
		BaseURL: f.url, ClientID: f.clientID, ClientSecret: f.clientSecret,
		Credentials: irp.Users(irp.Credentials{UserName: f.userName, Password: f.password}, users),
		PublicKey:   pub, SigningKey: cert, Timeout: f.timeout,
	}, true, nil
}

// readIRPCredentials reads a credentials file: one "GSTIN USER PASSWORD"
// line per GSTIN (the password is the rest of the line), blank lines and
// lines starting with # ignored. It fails naming the line for a malformed
// line, an invalid GSTIN or one listed twice.
func readIRPCredentials(file string) (map[string]irp.Credentials, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	users := map[string]irp.Credentials{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, " ", 3)
		if len(parts) != 3 || strings.TrimSpace(parts[1]) == "" || strings.TrimSpace(parts[2]) == "" {
			return nil, fmt.Errorf("line %d: want GSTIN USER PASSWORD", n)
		}
		g, err := gst.ParseGSTIN(parts[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if _, dup := users[string(g)]; dup {
			return nil, fmt.Errorf("line %d: GSTIN %s is listed twice", n, g)
		}
		users[string(g)] = irp.Credentials{UserName: strings.TrimSpace(parts[1]), Password: strings.TrimSpace(parts[2])}
	}
	return users, sc.Err()
}

// runIRPCheck authenticates at the configured IRP as a GSTIN's API user and
// prints the session's expiry: a check of the IRP settings serve will use.
// It fails with a *usageError for missing settings, and with the IRP's
// refusal (or the reason it could not be reached) otherwise.
func runIRPCheck(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "irp-check", "--gstin GSTIN [--irp-url URL …] (the IRP settings of serve, also from INVOICED_IRP_*)")
	gstin := fs.String("gstin", "", "the supplier GSTIN to authenticate for")
	var f irpFlags
	addIRPFlags(fs, &f)
	documentEnv(fs)
	if err := parseFlags(fs, args, "gstin"); err != nil {
		return err
	}
	if err := applyEnv(fs, e.getenv); err != nil {
		return err
	}
	g, err := gst.ParseGSTIN(*gstin)
	if err != nil {
		return usageErrorf("irp-check: --gstin: %v", err)
	}
	cfg, on, err := f.config("irp-check")
	if err != nil {
		return err
	}
	if !on {
		return usageErrorf("irp-check: --irp-url (INVOICED_IRP_URL) is not set: e-invoicing is off")
	}
	c, err := irp.New(cfg)
	if err != nil {
		return usageErrorf("irp-check: %v", err)
	}
	s, err := c.Authenticate(ctx, string(g))
	if err != nil {
		return fmt.Errorf("irp-check: %w", err)
	}
	fmt.Fprintf(e.stdout, "authenticated at %s as %s for %s; token valid until %s\n", cfg.BaseURL, s.UserName, s.GSTIN, s.Expiry.In(gst.IST).Format(time.DateTime+" MST"))
	return nil
}
