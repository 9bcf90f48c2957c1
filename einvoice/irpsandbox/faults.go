package irpsandbox

import (
	"fmt"
	"time"

	"github.com/invoiced/invoiced/einvoice"
)

// FaultMode is how a fault disturbs a request.
type FaultMode string

// The fault modes. "Acting" is what the request asks: registering,
// cancelling, authenticating, looking up.
const (
	// DropBefore closes the connection without acting or answering: the
	// client's request is lost.
	DropBefore FaultMode = "drop_before"
	// DropAfter acts, then closes the connection without answering: the
	// answer is lost.
	DropAfter FaultMode = "drop_after"
	// DelayBefore waits Delay, then acts and answers: the request arrives
	// late, perhaps after the client has given up and asked again.
	DelayBefore FaultMode = "delay_before"
	// DelayAfter acts, waits Delay, then answers: a slow answer.
	DelayAfter FaultMode = "delay_after"
)

// Valid reports whether m is one of the four modes.
func (m FaultMode) Valid() bool {
	return m == DropBefore || m == DropAfter || m == DelayBefore || m == DelayAfter
}

// Fault disturbs the requests of one call (Op; empty: every call). Each
// request that matches is disturbed with Probability (0 means always), until
// Times requests have been (0 means without end, until ClearFaults).
type Fault struct {
	Op          einvoice.Op   `json:"op,omitempty"`
	Mode        FaultMode     `json:"mode"`
	Delay       time.Duration `json:"delay,omitempty"`
	Probability float64       `json:"probability,omitempty"`
	Times       int           `json:"times,omitempty"`
}

// faultState is a fault and how many requests it has disturbed.
type faultState struct {
	Fault
	hits int
}

// AddFault adds f after the faults already set; a request takes the first
// that matches and draws. It fails for an unknown mode or call, a delay
// mode without a delay, or a probability outside 0..1.
func (s *Server) AddFault(f Fault) error {
	switch {
	case !f.Mode.Valid():
		return fmt.Errorf("irpsandbox: fault mode %q is not drop_before, drop_after, delay_before or delay_after", f.Mode)
	case f.Op != "" && f.Op != einvoice.OpAuth && f.Op != einvoice.OpRegister && f.Op != einvoice.OpLookup && f.Op != einvoice.OpGet && f.Op != einvoice.OpCancel:
		return fmt.Errorf("irpsandbox: fault op %q is not auth, register, lookup, get or cancel", f.Op)
	case (f.Mode == DelayBefore || f.Mode == DelayAfter) && f.Delay <= 0:
		return fmt.Errorf("irpsandbox: a %s fault needs a positive delay", f.Mode)
	case f.Probability < 0 || f.Probability > 1 || f.Times < 0:
		return fmt.Errorf("irpsandbox: probability %v must be 0 to 1 and times %d at least 0", f.Probability, f.Times)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &faultState{Fault: f})
	return nil
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// Faults returns the faults set, with how many requests each may still
// disturb (Times, 0 without end).
func (s *Server) Faults() []Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Fault, len(s.faults))
	for i, f := range s.faults {
		out[i] = f.Fault
		if f.Times > 0 {
			out[i].Times = f.Times - f.hits
		}
	}
	return out
}

// fault counts a request of op and returns the fault that disturbs it, or
// nil. A fault spent (Times reached) is removed.
func (s *Server) fault(op einvoice.Op) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[op]++
	for i, f := range s.faults {
		if f.Op != "" && f.Op != op {
			continue
		}
		if f.Probability > 0 && s.rng.Float64() >= f.Probability {
			continue
		}
		f.hits++
		if f.Times > 0 && f.hits >= f.Times {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		}
		out := f.Fault
		return &out
	}
	return nil
}
