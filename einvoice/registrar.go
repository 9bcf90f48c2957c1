package einvoice

import (
	"context"
	"fmt"
	"time"
)

// Registrar registers documents at an IRP: the IRP's own API (package
// einvoice/irp) or, later, a GSP's. Every method returns an answer or an
// error whose Kind says what the caller may conclude (KindOf, the answer
// table in errors.go and docs/e-invoice.md); an error that is not an *Error
// is KindUnknown: the IRP may have acted.
type Registrar interface {
	// Register asks the IRP to register p, after checking it against the
	// INV-01 schema (ErrInvalidPayload, and nothing sent, when it does not
	// hold). It returns the registration, or KindDuplicate when p's key
	// was registered before (Error.Duplicate says what the IRP told of it;
	// Recover turns that into a registration), KindRejected when the IRP
	// refuses p as it is, and the transport kinds otherwise.
	Register(ctx context.Context, p *Payload) (*Registration, error)
	// Lookup returns the registration of the document k (the IRP's "get
	// IRN by document details"). It returns KindNotFound when the IRP has
	// none to show, which does not prove there is none (the IRP shows
	// details for a few days only).
	Lookup(ctx context.Context, k DocKey) (*Registration, error)
	// Get returns the registration of irn, an IRN of supplier gstin (the
	// IRP's "get e-invoice by IRN"); KindNotFound and KindGone as Lookup.
	Get(ctx context.Context, gstin, irn string) (*Registration, error)
	// Cancel cancels c.IRN, an IRN of supplier gstin. It returns the
	// cancellation, or KindCancelWindowClosed (more than 24 hours after
	// registration: a credit note is the way), KindEWayBillActive (cancel
	// the e-way bill first), KindNotActive (the IRN is cancelled already)
	// and the transport kinds.
	Cancel(ctx context.Context, gstin string, c CancelRequest) (*Cancellation, error)
}

// Registration is what the IRP answers for a registered document.
type Registration struct {
	IRN     string
	AckNo   string    // the IRP's acknowledgement number (15 digits)
	AckDate time.Time // when the IRP registered it
	Status  IRNStatus // ACT or CNL; empty when the answer did not say
	// SignedInvoice and SignedQRCode are the IRP's signed JWTs, verified
	// against its signing certificate by the registrar. SignedQRCode is
	// what the receipt's QR code encodes (Rule 48(4)). Both are empty in a
	// registration made from a duplicate's InfoDtls alone (Partial).
	SignedInvoice string
	SignedQRCode  string
	// QR is SignedQRCode's content, and Signed the document as the IRP
	// signed it (its key and totals, to compare with what was sent).
	QR     QRCode
	Signed *SignedDocument
}

// Partial reports whether r lacks the signed invoice and QR code: made from
// a duplicate's InfoDtls when the IRP no longer shows the details (more
// than two days after registration).
func (r *Registration) Partial() bool { return r.SignedQRCode == "" }

// QRCode is the content of the IRP's signed QR code.
type QRCode struct {
	SellerGstin string  `json:"SellerGstin"`
	BuyerGstin  string  `json:"BuyerGstin"`
	DocNo       string  `json:"DocNo"`
	DocTyp      DocType `json:"DocTyp"`
	DocDt       string  `json:"DocDt"` // dd/mm/yyyy
	TotInvVal   Number  `json:"TotInvVal"`
	ItemCnt     int     `json:"ItemCnt"`
	MainHsnCode string  `json:"MainHsnCode"`
	Irn         string  `json:"Irn"`
	IrnDt       string  `json:"IrnDt"` // yyyy-MM-dd HH:mm:ss, IST
}

// SignedDocument is the part of the IRP's signed invoice that identifies
// the document and its value: the payload as registered, with the IRN and
// acknowledgement the IRP added.
type SignedDocument struct {
	AckNo      NumberText `json:"AckNo"`
	AckDt      string     `json:"AckDt"`
	Irn        string     `json:"Irn"`
	DocDtls    DocDtls    `json:"DocDtls"`
	SellerDtls struct {
		Gstin string `json:"Gstin"`
	} `json:"SellerDtls"`
	BuyerDtls struct {
		Gstin string `json:"Gstin"`
	} `json:"BuyerDtls"`
	ValDtls struct {
		TotInvVal Number `json:"TotInvVal"`
	} `json:"ValDtls"`
}

// CancelReason is why an IRN is cancelled, as the IRP codes it.
type CancelReason int

// The IRP's cancel reasons.
const (
	CancelDuplicate      CancelReason = 1
	CancelDataEntry      CancelReason = 2
	CancelOrderCancelled CancelReason = 3
	CancelOther          CancelReason = 4
)

// Valid reports whether r is one of the four reasons.
func (r CancelReason) Valid() bool { return r >= CancelDuplicate && r <= CancelOther }

// String returns r's meaning, "data entry mistake".
func (r CancelReason) String() string {
	switch r {
	case CancelDuplicate:
		return "duplicate"
	case CancelDataEntry:
		return "data entry mistake"
	case CancelOrderCancelled:
		return "order cancelled"
	case CancelOther:
		return "other"
	}
	return fmt.Sprintf("CancelReason(%d)", int(r))
}

// MaxCancelRemark is the longest remark the IRP takes (CnlRem), in
// characters.
const MaxCancelRemark = 100

// CancelRequest asks for an IRN's cancellation.
type CancelRequest struct {
	IRN    string
	Reason CancelReason
	Remark string // 1 to MaxCancelRemark characters
}

// Cancellation is the IRP's answer to a cancel.
type Cancellation struct {
	IRN        string
	CancelDate time.Time
}

// CancelWindow is how long after registration the IRP lets an IRN be
// cancelled.
const CancelWindow = 24 * time.Hour
