package irp

import (
	"crypto/rsa"
	"encoding/json"
	"fmt"

	"github.com/golang-jwt/jwt/v5"
	"github.com/invoiced/invoiced/einvoice"
)

// SignedClaims are the claims of the IRP's signed JWTs: Data is the signed
// JSON — the invoice as registered, or the QR code's content — as a
// string; the issuer is "NIC".
type SignedClaims struct {
	Data string `json:"data"`
	jwt.RegisteredClaims
}

// VerifySigned returns the data claim of token, a JWT the IRP signed, once
// its RS256 signature checks against key. It fails for any other
// algorithm (none, HMAC), a bad signature, or an empty data claim. Claims
// such as exp are not judged: a signed invoice stays signed.
func VerifySigned(token string, key *rsa.PublicKey) ([]byte, error) {
	var c SignedClaims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodRS256.Alg()}), jwt.WithoutClaimsValidation())
	if err != nil {
		return nil, fmt.Errorf("irp: signed content: %w", err)
	}
	if c.Data == "" {
		return nil, fmt.Errorf("irp: signed content without data")
	}
	return []byte(c.Data), nil
}

// verifyRegistration fills reg's QR and Signed from its signed invoice and
// QR code after verifying both against key, and checks they name reg's
// IRN. It fails when either does not verify or decode, or names another
// IRN.
func verifyRegistration(reg *einvoice.Registration, key *rsa.PublicKey) error {
	inv, err := VerifySigned(reg.SignedInvoice, key)
	if err != nil {
		return fmt.Errorf("SignedInvoice: %w", err)
	}
	var doc einvoice.SignedDocument
	if err := json.Unmarshal(inv, &doc); err != nil {
		return fmt.Errorf("SignedInvoice: %w", err)
	}
	qr, err := VerifySigned(reg.SignedQRCode, key)
	if err != nil {
		return fmt.Errorf("SignedQRCode: %w", err)
	}
	if err := json.Unmarshal(qr, &reg.QR); err != nil {
		return fmt.Errorf("SignedQRCode: %w", err)
	}
	if doc.Irn != reg.IRN || reg.QR.Irn != reg.IRN {
		return fmt.Errorf("the signed invoice names IRN %q and the QR code %q, the answer %q", doc.Irn, reg.QR.Irn, reg.IRN)
	}
	reg.Signed = &doc
	return nil
}
