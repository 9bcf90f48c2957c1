package irpsandbox

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1" // x5t is a SHA-1 thumbprint by definition (RFC 7515 §4.1.7): it names the certificate, it guards nothing
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// Keys are the sandbox's two key pairs, as the IRP has two: one whose
// public half clients encrypt their credentials with, and one that signs
// invoices and QR codes, published as a certificate.
type Keys struct {
	Encryption  *rsa.PrivateKey
	Signing     *rsa.PrivateKey
	SigningCert *x509.Certificate
}

// KeyBits is the size of the keys GenerateKeys makes, the IRP's.
const KeyBits = 2048

// GenerateKeys returns new keys and a self-signed certificate for the
// signing key, valid ten years from now.
func GenerateKeys() (Keys, error) {
	enc, err := rsa.GenerateKey(rand.Reader, KeyBits)
	if err != nil {
		return Keys{}, err
	}
	sig, err := rsa.GenerateKey(rand.Reader, KeyBits)
	if err != nil {
		return Keys{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return Keys{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "invoiced IRP sandbox signing", Organization: []string{"invoiced sandbox (not the IRP)"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &sig.PublicKey, sig)
	if err != nil {
		return Keys{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return Keys{}, err
	}
	return Keys{Encryption: enc, Signing: sig, SigningCert: cert}, nil
}

// The files of a key directory (LoadOrCreateKeys).
const (
	FileEncryptionKey = "encryption-key.pem" // private: the sandbox's
	FilePublicKey     = "public-key.pem"     // for clients: INVOICED_IRP_PUBLIC_KEY
	FileSigningKey    = "signing-key.pem"    // private: the sandbox's
	FileSigningCert   = "signing-cert.pem"   // for clients: INVOICED_IRP_SIGNING_CERT
)

// LoadOrCreateKeys returns the keys kept in dir, generating and writing
// them (private keys readable by the owner only) when dir holds none. It
// fails when dir holds some of the files but not all, or one does not
// parse.
func LoadOrCreateKeys(dir string) (Keys, error) {
	names := []string{FileEncryptionKey, FilePublicKey, FileSigningKey, FileSigningCert}
	present := 0
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			present++
		}
	}
	switch present {
	case 0:
		k, err := GenerateKeys()
		if err != nil {
			return Keys{}, err
		}
		return k, k.write(dir)
	case len(names):
		return loadKeys(dir)
	}
	return Keys{}, fmt.Errorf("irpsandbox: %s holds %d of the key files %v: remove them or add the rest", dir, present, names)
}

// write stores k's files in dir, creating it.
func (k Keys) write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	private := func(key *rsa.PrivateKey) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	}
	for _, f := range []struct {
		name string
		mode os.FileMode
		data []byte
	}{
		{FileEncryptionKey, 0o600, private(k.Encryption)},
		{FilePublicKey, 0o644, k.PublicKeyPEM()},
		{FileSigningKey, 0o600, private(k.Signing)},
		{FileSigningCert, 0o644, k.CertificatePEM()},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// loadKeys reads the key files of dir.
func loadKeys(dir string) (Keys, error) {
	read := func(name, typ string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		block, _ := pem.Decode(b)
		if block == nil || block.Type != typ {
			return nil, fmt.Errorf("irpsandbox: %s: want a PEM %s", name, typ)
		}
		return block.Bytes, nil
	}
	var k Keys
	b, err := read(FileEncryptionKey, "RSA PRIVATE KEY")
	if err == nil {
		k.Encryption, err = x509.ParsePKCS1PrivateKey(b)
	}
	if err == nil {
		b, err = read(FileSigningKey, "RSA PRIVATE KEY")
	}
	if err == nil {
		k.Signing, err = x509.ParsePKCS1PrivateKey(b)
	}
	if err == nil {
		b, err = read(FileSigningCert, "CERTIFICATE")
	}
	if err == nil {
		k.SigningCert, err = x509.ParseCertificate(b)
	}
	if err != nil {
		return Keys{}, err
	}
	if !k.Signing.PublicKey.Equal(k.SigningCert.PublicKey) {
		return Keys{}, errors.New("irpsandbox: the signing certificate is not of the signing key")
	}
	return k, nil
}

// thumbprint returns the SHA-1 of the certificate's DER: its x5t (in
// base64url) and kid (in hex) name it in the JWTs' header.
func thumbprint(c *x509.Certificate) []byte {
	sum := sha1.Sum(c.Raw)
	return sum[:]
}

// PublicKeyPEM returns the encryption key's public half as a PEM PUBLIC KEY:
// what clients encrypt their credentials with.
func (k Keys) PublicKeyPEM() []byte {
	der, err := x509.MarshalPKIXPublicKey(&k.Encryption.PublicKey)
	if err != nil {
		panic("irpsandbox: " + err.Error()) // an RSA key always marshals
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// CertificatePEM returns the signing certificate as PEM: what clients
// verify signed invoices and QR codes with.
func (k Keys) CertificatePEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: k.SigningCert.Raw})
}
