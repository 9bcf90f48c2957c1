package einvoice

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
)

// Errors of the builder and the schema check. Match them with errors.Is; the
// returned errors carry a specific message naming the field.
var (
	// ErrNotApplicable: the document needs no IRN (a B2C invoice, a bill
	// of supply, a cancelled invoice); returned by Build.
	ErrNotApplicable = apperr.New(apperr.Invalid, "e_invoice_not_applicable", "the document needs no IRN")
	// ErrInvalidPayload: the document or a party cannot be written as a
	// valid INV-01 payload (a missing PIN, a description shorter than the
	// IRP takes); returned by Build and Validate, before anything is sent.
	ErrInvalidPayload = apperr.New(apperr.Invalid, "e_invoice_invalid", "the e-invoice payload is not valid")
)

// Kind is what an answer of the IRP — or its absence — lets a caller
// conclude. Each has one row in kindTable: whether the IRP did what it was
// asked (Outcome), whether asking again later may succeed, and what it
// means. The zero Kind is KindUnknown, the safe one: a lost answer is not
// a "no".
type Kind int

// The kinds, one per row of kindTable.
const (
	// KindUnknown: no answer, or one that cannot be trusted (a timeout, a
	// reset connection, a 5xx, an answer that does not decrypt or whose
	// signature fails). The IRP may have acted. Ask again: a second
	// registration of the same document is refused as a duplicate, which
	// recovers the first.
	KindUnknown Kind = iota
	// KindUnavailable: the request never reached the IRP (no connection),
	// or the IRP answered that it could not act now (2146). Nothing was
	// done; ask again later.
	KindUnavailable
	// KindAuth: the IRP refused the credentials or the session (1xxx
	// codes, 1005 again after authenticating afresh). Nothing was done;
	// an operator must fix the configuration.
	KindAuth
	// KindRejected: the IRP refused the document or request as it is
	// (schema, validation, GSTIN, tax errors: every code not listed in
	// codeKinds). Nothing was done; the same request will be refused again.
	KindRejected
	// KindDuplicate: 2150, the document was registered before. It is
	// registered; recover its registration (Recover), never register it
	// as new.
	KindDuplicate
	// KindNotFound: a lookup found nothing to show (2148, 2154). It does
	// not prove the document unregistered (the IRP shows details for a
	// few days); register it, and a duplicate answer recovers it.
	KindNotFound
	// KindGone: 2283, the registration is older than the IRP shows
	// details for. It is registered; what the duplicate answer said is
	// all there is.
	KindGone
	// KindCancelWindowClosed: 2270, more than 24 hours after registration.
	// The IRN stays active; only a credit note corrects the invoice.
	KindCancelWindowClosed
	// KindEWayBillActive: 2230, an e-way bill on the IRN is active. The IRN
	// stays active until the e-way bill is cancelled.
	KindEWayBillActive
	// KindNotActive: 9999, the IRN is not active: cancelled before (by an
	// earlier attempt whose answer was lost, or on the portal).
	KindNotActive
	// KindMismatch: the IRP holds a registration for the document's key
	// with other details (buyer or value) than the document's: the number
	// was registered by someone else or for another document. A person
	// must look.
	KindMismatch
	numKinds
)

// Outcome says whether the IRP did what it was asked.
type Outcome int

// The outcomes. The zero Outcome is OutcomeUnknown.
const (
	// OutcomeUnknown: it may or may not have; act as if it may have.
	OutcomeUnknown Outcome = iota
	// OutcomeNotDone: it definitely did not.
	OutcomeNotDone
	// OutcomeDone: it is done, by this request or an earlier one (a
	// registration that exists, an IRN already cancelled).
	OutcomeDone
)

// String returns "unknown", "not_done" or "done".
func (o Outcome) String() string {
	switch o {
	case OutcomeNotDone:
		return "not_done"
	case OutcomeDone:
		return "done"
	}
	return "unknown"
}

// kindRow is one row of the answer table.
type kindRow struct {
	name    string
	outcome Outcome
	retry   bool // asking again later, unchanged, may succeed
}

// kindTable is the answer table: what each Kind lets a caller conclude.
// docs/e-invoice.md renders it with the codes; TestKindTableComplete keeps
// a row for every kind.
var kindTable = [numKinds]kindRow{
	KindUnknown:            {"unknown", OutcomeUnknown, true},
	KindUnavailable:        {"unavailable", OutcomeNotDone, true},
	KindAuth:               {"auth", OutcomeNotDone, false},
	KindRejected:           {"rejected", OutcomeNotDone, false},
	KindDuplicate:          {"duplicate", OutcomeDone, false},
	KindNotFound:           {"not_found", OutcomeUnknown, false},
	KindGone:               {"gone", OutcomeDone, false},
	KindCancelWindowClosed: {"cancel_window_closed", OutcomeNotDone, false},
	KindEWayBillActive:     {"e_way_bill_active", OutcomeNotDone, false},
	KindNotActive:          {"not_active", OutcomeDone, false},
	KindMismatch:           {"mismatch", OutcomeDone, false},
}

// row returns k's row; an unknown k reads as KindUnknown's.
func (k Kind) row() kindRow {
	if k < 0 || k >= numKinds {
		return kindTable[KindUnknown]
	}
	return kindTable[k]
}

// String returns k's snake_case name ("duplicate").
func (k Kind) String() string { return k.row().name }

// Outcome returns whether an answer of kind k means the IRP did what it was
// asked.
func (k Kind) Outcome() Outcome { return k.row().outcome }

// Retry reports whether asking again later, unchanged, may succeed.
func (k Kind) Retry() bool { return k.row().retry }

// Kinds returns every kind, in table order.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

// codeKinds are the IRP error codes that mean something other than
// KindRejected (docs/e-invoice.md lists them with their sources). 1005
// (invalid token) is handled by the client, which authenticates afresh and
// asks once more; when it comes back, it is KindAuth.
var codeKinds = map[string]Kind{
	"2150": KindDuplicate,
	"2146": KindUnavailable, // "unable to create IRN, please try after some time"
	"2147": KindUnknown,     // "unable to sign invoice, please try after some time": it may be registered
	"2148": KindNotFound,
	"2154": KindNotFound,
	"2283": KindGone,
	"2270": KindCancelWindowClosed,
	"2230": KindEWayBillActive,
	"9999": KindNotActive,
	"1004": KindAuth, "1005": KindAuth, "1006": KindAuth, "1007": KindAuth, "1008": KindAuth,
	"1010": KindAuth, "1011": KindAuth, "1012": KindAuth, "1013": KindAuth, "1014": KindAuth,
	"1015": KindAuth, "1016": KindAuth, "1017": KindAuth, "1018": KindAuth, "1019": KindAuth,
	"3000": KindAuth,
}

// kindPrecedence orders kinds for an answer with several codes: the first
// that any code maps to wins. A duplicate says the document is registered
// whatever else is wrong with the request; an unknown outcome outranks any
// refusal.
var kindPrecedence = []Kind{KindDuplicate, KindGone, KindNotActive, KindUnknown, KindMismatch,
	KindCancelWindowClosed, KindEWayBillActive, KindAuth, KindUnavailable, KindNotFound, KindRejected}

// CodeKind returns the kind of one IRP error code: its codeKinds entry, else
// KindRejected.
func CodeKind(code string) Kind {
	if k, ok := codeKinds[strings.TrimSpace(code)]; ok {
		return k
	}
	return KindRejected
}

// KindOfDetails returns the kind of an error answer holding details: the
// kind of its codes that comes first in kindPrecedence. An answer without
// any code is KindUnknown: a refusal that does not say why is not trusted
// to mean "not done".
func KindOfDetails(details []ErrorDetail) Kind {
	if len(details) == 0 {
		return KindUnknown
	}
	seen := map[Kind]bool{}
	for _, d := range details {
		seen[CodeKind(d.Code)] = true
	}
	for _, k := range kindPrecedence {
		if seen[k] {
			return k
		}
	}
	return KindRejected
}

// ErrorDetail is one entry of the IRP's ErrorDetails.
type ErrorDetail struct {
	Code    string `json:"ErrorCode"`
	Message string `json:"ErrorMessage"`
}

// Duplicate is what the IRP says of an earlier registration when it refuses
// a second (InfoDtls, InfCd DUPIRN).
type Duplicate struct {
	IRN     string
	AckNo   string
	AckDate time.Time
}

// Op names the registrar call an error comes from.
type Op string

// The registrar calls.
const (
	OpAuth     Op = "auth"
	OpRegister Op = "register"
	OpLookup   Op = "lookup"
	OpGet      Op = "get"
	OpCancel   Op = "cancel"
)

// Error is a registrar's failure: what was asked (Op), what it lets the
// caller conclude (Kind), and the IRP's own words when it answered.
type Error struct {
	Op      Op
	Kind    Kind
	Details []ErrorDetail // the IRP's ErrorDetails, when it answered with them
	// Duplicate is set for KindDuplicate when the IRP said which
	// registration it keeps.
	Duplicate *Duplicate
	// HTTPStatus is the answer's status code, 0 when none arrived.
	HTTPStatus int
	Err        error // the cause: a transport or decoding error
}

// Error returns "e-invoice register: duplicate: 2150 Duplicate IRN" and the
// like.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "e-invoice %s: %s", e.Op, e.Kind)
	for i, d := range e.Details {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(d.Code)
		if d.Message != "" {
			b.WriteString(" " + d.Message)
		}
	}
	if e.HTTPStatus != 0 && len(e.Details) == 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.HTTPStatus)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Outcome returns e.Kind's outcome.
func (e *Error) Outcome() Outcome { return e.Kind.Outcome() }

// Retry reports whether asking again later, unchanged, may succeed.
func (e *Error) Retry() bool { return e.Kind.Retry() }

// HasCode reports whether the IRP's answer held code.
func (e *Error) HasCode(code string) bool {
	for _, d := range e.Details {
		if d.Code == code {
			return true
		}
	}
	return false
}

// KindOf returns the Kind of the first *Error in err's chain; any other
// non-nil error is KindUnknown, and nil is not an error at all (it panics:
// a caller must not ask what a success means).
func KindOf(err error) Kind {
	if err == nil {
		panic("einvoice: KindOf(nil)")
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindUnknown
}
