package irp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/einvoice"
)

// The protocol's messages, as the IRP's developer documentation names
// them. The sandbox (package einvoice/irpsandbox) speaks with the same
// types; TestWireShapes pins their JSON against the documentation's own
// samples, so that the two cannot agree on a misspelling.

// The IRP's paths, under the configured base URL.
const (
	PathAuth       = "/eivital/v1.04/auth"
	PathInvoice    = "/eicore/v1.03/Invoice"
	PathCancel     = "/eicore/v1.03/Invoice/Cancel"
	PathByDocument = "/eicore/v1.03/Invoice/irnbydocdetails"
	PathByIRN      = "/eicore/v1.03/Invoice/irn/" // + IRN
)

// The request headers. They are sent spelt exactly so (underscores, case),
// as the documentation spells them.
const (
	HeaderClientID     = "client_id"
	HeaderClientSecret = "client_secret"
	HeaderGSTIN        = "Gstin"
	HeaderUserName     = "user_name"
	HeaderAuthToken    = "AuthToken"
)

// TimeLayout is how the IRP writes a moment (AckDt, TokenExpiry,
// CancelDate), in IST: "2020-06-06 11:19:00".
const TimeLayout = "2006-01-02 15:04:05"

// ParseTime returns the IST moment the IRP wrote as TimeLayout. It fails for
// any other shape.
func ParseTime(s string) (time.Time, error) {
	return time.ParseInLocation(TimeLayout, s, istZone)
}

// FormatTime returns t as the IRP writes a moment, in IST.
func FormatTime(t time.Time) string { return t.In(istZone).Format(TimeLayout) }

// istZone is India Standard Time.
var istZone = time.FixedZone("IST", 5*3600+1800)

// Request is the body of every call: the payload, encrypted and base64
// ({"Data": "…"}).
type Request struct {
	Data string `json:"Data"`
}

// Answer is the body of every answer. Data is, for authentication, an
// object (AuthData); for the other calls a base64 string, the payload
// encrypted with the session key; null on failure.
type Answer struct {
	Status       Flag            `json:"Status"`
	Data         json.RawMessage `json:"Data,omitempty"`
	ErrorDetails ErrorDetails    `json:"ErrorDetails"`
	InfoDtls     []InfoDetail    `json:"InfoDtls"`
}

// Flag is an answer's Status: 1 success, 0 failure. The IRP writes it as a
// number; some relays write "1": both are read.
type Flag int

// UnmarshalJSON reads 1, 0, "1" or "0".
func (f *Flag) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case `1`, `"1"`:
		*f = 1
	case `0`, `"0"`, `null`:
		*f = 0
	default:
		return fmt.Errorf("irp: Status %.20s is not 1 or 0", b)
	}
	return nil
}

// ErrorDetails are an answer's errors. The IRP sends a JSON array; its
// first documentation version said the list comes base64-encoded in a
// string, which is read too.
type ErrorDetails []einvoice.ErrorDetail

// UnmarshalJSON reads an array of {ErrorCode, ErrorMessage}, null, or a
// string holding such an array in base64 or as JSON text.
func (d *ErrorDetails) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*d = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
			b = raw
		} else {
			b = []byte(s)
		}
	}
	var list []einvoice.ErrorDetail
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("irp: ErrorDetails: %w", err)
	}
	*d = list
	return nil
}

// InfoDetail is one entry of an answer's InfoDtls: a code and its
// description, whose shape depends on the code.
type InfoDetail struct {
	InfCd string          `json:"InfCd"`
	Desc  json.RawMessage `json:"Desc"`
}

// InfoDuplicate is the InfCd of a duplicate's description (DupDesc).
const InfoDuplicate = "DUPIRN"

// DupDesc is what the IRP says, with 2150, of the registration it keeps.
type DupDesc struct {
	AckNo einvoice.NumberText `json:"AckNo"`
	AckDt string              `json:"AckDt"`
	Irn   string              `json:"Irn"`
}

// AuthPayload is what authentication sends, before it is base64-encoded
// and encrypted with the IRP's public key. AppKey is the 32-byte app key in
// base64.
type AuthPayload struct {
	UserName                string `json:"UserName"`
	Password                string `json:"Password"`
	AppKey                  string `json:"AppKey"`
	ForceRefreshAccessToken bool   `json:"ForceRefreshAccessToken"`
}

// AuthData is authentication's answer (Data, not encrypted). Sek is the
// session key encrypted with the app key, base64.
type AuthData struct {
	ClientID    string `json:"ClientId"`
	UserName    string `json:"UserName"`
	AuthToken   string `json:"AuthToken"`
	Sek         string `json:"Sek"`
	TokenExpiry string `json:"TokenExpiry"`
}

// IRNData is the answer of Generate IRN and of the lookups (decrypted
// Data): the registration.
type IRNData struct {
	AckNo         einvoice.NumberText  `json:"AckNo"`
	AckDt         string               `json:"AckDt"`
	Irn           string               `json:"Irn"`
	SignedInvoice string               `json:"SignedInvoice"`
	SignedQRCode  string               `json:"SignedQRCode"`
	Status        string               `json:"Status,omitempty"` // ACT or CNL
	EwbNo         *einvoice.NumberText `json:"EwbNo,omitempty"`
	EwbDt         string               `json:"EwbDt,omitempty"`
	EwbValidTill  string               `json:"EwbValidTill,omitempty"`
	Remarks       string               `json:"Remarks,omitempty"`
}

// CancelPayload asks for a cancel: CnlRsn "1" to "4", CnlRem a remark.
type CancelPayload struct {
	Irn    string `json:"Irn"`
	CnlRsn string `json:"CnlRsn"`
	CnlRem string `json:"CnlRem"`
}

// CancelData is a cancel's answer (decrypted Data).
type CancelData struct {
	Irn        string `json:"Irn"`
	CancelDate string `json:"CancelDate"`
}
