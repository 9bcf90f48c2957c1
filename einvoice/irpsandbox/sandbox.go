// Package irpsandbox is a local Invoice Registration Portal: an HTTP server
// that speaks the IRP's protocol as package einvoice/irp does — the same
// authentication, encryption, signed JWTs, schema and error answers — with
// its own keys, for tests, CI and the demo (`invoiced irp-sandbox`).
//
// It registers each document key (supplier GSTIN, financial year, type,
// number) once, with IRN = SHA-256 of the key; refuses a second
// registration with 2150 and the first's IRN in InfoDtls; refuses a cancel
// more than 24 hours after registration (2270, by its own clock, which a
// test can move) or while an e-way bill is active (2230, which a test can
// mark); refuses payloads that break the INV-01 schema. On request it is
// slow or loses answers (Fault): delays before or after acting, or closes
// the connection before acting or after acting without answering — a lost
// answer as a client sees one.
//
// What it registered is listed by Registrations and GET
// /sandbox/registrations, so a test can count IRNs per document. Nothing
// in the client knows it is a sandbox: it is configured like the IRP, with
// the sandbox's public key and signing certificate.
package irpsandbox

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/invoiced/invoiced/einvoice"
)

// Config is what a sandbox needs. Keys are required; the rest have
// defaults.
type Config struct {
	Keys Keys
	// ClientID and ClientSecret are the integrator's credentials the
	// sandbox accepts (default "sandbox-client" and "sandbox-secret").
	ClientID     string
	ClientSecret string
	// Users are the API users it accepts, user name → password, for any
	// GSTIN (default sandbox → sandbox).
	Users map[string]string
	// TokenLife is how long a token lives (default 60 minutes, as on the
	// IRP's own sandbox; 6 hours in production).
	TokenLife time.Duration
	// DetailsFor is how long after registration the lookups show a
	// registration's details (default 48 hours; 2283 after that).
	DetailsFor time.Duration
	// Now is the sandbox's clock before Advance moves it (default
	// time.Now).
	Now func() time.Time
	// Seed seeds the draws of faults with a probability.
	Seed uint64
}

// Defaults of Config.
const (
	DefaultClientID     = "sandbox-client"
	DefaultClientSecret = "sandbox-secret"
	DefaultUser         = "sandbox"
	DefaultPassword     = "sandbox"
	DefaultTokenLife    = 60 * time.Minute
	DefaultDetailsFor   = 48 * time.Hour
)

// Server is a sandbox IRP. Its methods are safe for concurrent use with
// its HTTP handler (Handler).
type Server struct {
	cfg Config

	mu       sync.Mutex
	offset   time.Duration            // Advance's sum
	sessions map[string]*session      // by AuthToken
	current  map[string]*session      // by user name + GSTIN: the live one
	docs     map[string]*registration // by IRN
	ackSeq   int64
	faults   []*faultState
	rng      *rand.Rand
	calls    map[einvoice.Op]int
}

// New returns a sandbox for cfg. It fails when cfg has no keys.
func New(cfg Config) (*Server, error) {
	if cfg.Keys.Encryption == nil || cfg.Keys.Signing == nil || cfg.Keys.SigningCert == nil {
		return nil, fmt.Errorf("irpsandbox: keys are required (GenerateKeys or LoadOrCreateKeys)")
	}
	cfg.ClientID = cmp.Or(cfg.ClientID, DefaultClientID)
	cfg.ClientSecret = cmp.Or(cfg.ClientSecret, DefaultClientSecret)
	if len(cfg.Users) == 0 {
		cfg.Users = map[string]string{DefaultUser: DefaultPassword}
	}
	cfg.TokenLife = cmp.Or(cfg.TokenLife, DefaultTokenLife)
	cfg.DetailsFor = cmp.Or(cfg.DetailsFor, DefaultDetailsFor)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Server{
		cfg: cfg, sessions: map[string]*session{}, current: map[string]*session{}, docs: map[string]*registration{},
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), calls: map[einvoice.Op]int{},
	}, nil
}

// Now returns the time by the sandbox's clock: Config.Now moved by Advance.
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now()
}

// now is Now with s.mu held.
func (s *Server) now() time.Time { return s.cfg.Now().Add(s.offset) }

// Advance moves the sandbox's clock by d (which may be negative): what
// judges the 24-hour cancel window, the details window and token expiry.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offset += d
}

// ExpireTokens ends every session: the next call with any token is answered
// 1005 (invalid token), as after the IRP's expiry.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions = map[string]*session{}
	s.current = map[string]*session{}
}

// Calls returns how many requests of op the sandbox has received (faults
// included: a request dropped before acting counts).
func (s *Server) Calls(op einvoice.Op) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// Registration is what the sandbox holds of one registered document.
type Registration struct {
	IRN         string     `json:"irn"`
	GSTIN       string     `json:"gstin"`
	DocType     string     `json:"doc_type"`
	DocNo       string     `json:"doc_no"`
	DocDate     string     `json:"doc_date"` // dd/mm/yyyy
	AckNo       string     `json:"ack_no"`
	AckDate     time.Time  `json:"ack_date"`
	Status      string     `json:"status"` // ACT or CNL
	CancelledAt *time.Time `json:"cancelled_at,omitempty"`
	CancelRsn   string     `json:"cancel_reason,omitempty"`
	EWayBill    bool       `json:"e_way_bill_active"`
	// Requests counts the Generate IRN requests for this key that the
	// sandbox acted on: the first and every duplicate.
	Requests int `json:"requests"`
}

// registration is a registered document: what is listed, and what the
// lookups answer.
type registration struct {
	Registration
	signedInvoice, signedQR string
}

// Registrations returns every registration, of gstin only when it is not
// empty, by acknowledgement number (the order they were made in).
func (s *Server) Registrations(gstin string) []Registration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Registration
	for _, r := range s.docs {
		if gstin == "" || r.GSTIN == gstin {
			out = append(out, r.Registration)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AckNo < out[j].AckNo })
	return out
}

// SetEWayBill marks an e-way bill on irn active or not: an active one
// makes a cancel of irn fail with 2230. It fails when the sandbox holds no
// registration irn.
func (s *Server) SetEWayBill(irn string, active bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.docs[irn]
	if r == nil {
		return fmt.Errorf("irpsandbox: no registration %s", irn)
	}
	r.EWayBill = active
	return nil
}
