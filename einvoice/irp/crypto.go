package irp

import (
	"bytes"
	"crypto/aes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// The IRP's symmetric encryption is AES-256 in ECB mode with PKCS #7
// padding: the app key encrypts the session key, the session key every
// payload. ECB leaks repeated blocks and Go's standard library offers no
// ECB mode for that reason; the protocol prescribes it, so it is written
// here, block by block, and pinned by the NIST SP 800-38A vectors
// (TestECBKnownAnswer).

// KeySize is the length of the app key and the session key: AES-256.
const KeySize = 32

// errPadding is what DecryptECB fails with for a ciphertext whose padding is
// not PKCS #7: the wrong key, or a corrupt message.
var errPadding = errors.New("irp: bad PKCS #7 padding (wrong key or corrupt data)")

// EncryptECB returns plain padded with PKCS #7 and encrypted with the
// 32-byte key in ECB mode. It fails only for a key of another length.
func EncryptECB(key, plain []byte) ([]byte, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("irp: AES-256 key of %d bytes", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	n := aes.BlockSize - len(plain)%aes.BlockSize
	buf := append(append(make([]byte, 0, len(plain)+n), plain...), bytes.Repeat([]byte{byte(n)}, n)...)
	for i := 0; i < len(buf); i += aes.BlockSize {
		block.Encrypt(buf[i:i+aes.BlockSize], buf[i:i+aes.BlockSize])
	}
	return buf, nil
}

// DecryptECB returns ct decrypted with the 32-byte key in ECB mode, its
// PKCS #7 padding removed. It fails for a key of another length, a
// ciphertext that is not whole blocks, and a padding that does not check
// (most often, the wrong key).
func DecryptECB(key, ct []byte) ([]byte, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("irp: AES-256 key of %d bytes", len(key))
	}
	if len(ct) == 0 || len(ct)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("irp: ciphertext of %d bytes is not whole AES blocks", len(ct))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(ct))
	for i := 0; i < len(ct); i += aes.BlockSize {
		block.Decrypt(out[i:i+aes.BlockSize], ct[i:i+aes.BlockSize])
	}
	n := int(out[len(out)-1])
	if n == 0 || n > aes.BlockSize {
		return nil, errPadding
	}
	for _, b := range out[len(out)-n:] {
		if int(b) != n {
			return nil, errPadding
		}
	}
	return out[:len(out)-n], nil
}

// encryptRSA returns msg encrypted with pub under PKCS #1 v1.5, as the
// IRP's authentication wants it (its documentation and sample code use
// RSA/ECB/PKCS1Padding; it documents no OAEP).
func encryptRSA(pub *rsa.PublicKey, msg []byte) ([]byte, error) {
	return rsa.EncryptPKCS1v15(rand.Reader, pub, msg) //nolint:staticcheck // SA1019: the IRP's protocol prescribes PKCS #1 v1.5
}

// ParsePublicKey returns the RSA public key in the PEM block of b: a PUBLIC
// KEY (PKIX), an RSA PUBLIC KEY (PKCS #1) or a CERTIFICATE, as the IRP
// hands out its encryption key. It fails when b holds none of them or the
// key is not RSA.
func ParsePublicKey(b []byte) (*rsa.PublicKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("irp: no PEM block in the public key")
	}
	var key any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var c *x509.Certificate
		if c, err = x509.ParseCertificate(block.Bytes); err == nil {
			key = c.PublicKey
		}
	default:
		return nil, fmt.Errorf("irp: PEM block %q is not a public key or certificate", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("irp: public key: %w", err)
	}
	pub, ok := key.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("irp: the public key is a %T, not RSA", key)
	}
	return pub, nil
}
