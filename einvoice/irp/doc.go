// Package irp is a client of the Invoice Registration Portal's own API
// (NIC's e-invoice API v1.03, authentication v1.04): it implements
// einvoice.Registrar.
//
// The protocol, as the IRP's developer documentation describes it and as
// implemented here (docs/e-invoice.md says what could not be confirmed):
//
//   - Authenticate (POST /eivital/v1.04/auth) with the user name, the
//     password and a random 32-byte app key, as JSON, base64-encoded and
//     encrypted with the IRP's RSA public key (PKCS #1 v1.5). The answer
//     holds an AuthToken with its expiry and the session key (SEK),
//     encrypted with the app key (AES-256-ECB, PKCS #7 padding).
//   - Every other call sends its JSON encrypted with the SEK, base64, in
//     {"Data": …}, with the headers client_id, client_secret, Gstin,
//     user_name and AuthToken, and gets its answer's Data back encrypted
//     the same way. Errors come as ErrorDetails [{ErrorCode,
//     ErrorMessage}], information as InfoDtls [{InfCd, Desc}].
//   - A token that expires is renewed before use; one the IRP refuses
//     (1005) is renewed and the call sent once more.
//   - SignedInvoice and SignedQRCode are JWTs (RS256) verified against the
//     IRP's signing certificate, a different key from the one that
//     encrypts.
//
// Every failure is an *einvoice.Error whose Kind says what the caller may
// conclude: a request that never reached the IRP is KindUnavailable, one
// whose answer was lost, garbled or unverifiable KindUnknown, and an
// answer of the IRP is classified by its codes (einvoice.KindOfDetails).
package irp
