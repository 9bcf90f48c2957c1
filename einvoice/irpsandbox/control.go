package irpsandbox

import (
	"encoding/json"
	"net/http"
	"time"
)

// The sandbox's controls, for tests and demos driven over HTTP (a test in
// the same process calls the Server's methods instead). The IRP has none
// of these; clients never call them.
//
//	GET    /sandbox/registrations[?gstin=G]   what it registered (Registrations)
//	POST   /sandbox/faults                    {"op","mode","delay":"2s","probability","times"} (AddFault)
//	GET    /sandbox/faults                    the faults set
//	DELETE /sandbox/faults                    remove them (ClearFaults)
//	POST   /sandbox/clock                     {"advance":"25h"} (Advance)
//	POST   /sandbox/ewaybills                 {"irn","active":true} (SetEWayBill)
//	POST   /sandbox/tokens/expire             end every session (ExpireTokens)
//	GET    /sandbox/certificate               the signing certificate, PEM
//	GET    /sandbox/public-key                the encryption public key, PEM

// controls registers the control routes on mux.
func (s *Server) controls(mux *http.ServeMux) {
	mux.HandleFunc("GET /sandbox/registrations", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"registrations": nonNil(s.Registrations(r.URL.Query().Get("gstin")))})
	})
	mux.HandleFunc("POST /sandbox/faults", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Fault
			Delay string `json:"delay"`
		}
		if !readJSON(w, r, &in) {
			return
		}
		f := in.Fault
		if in.Delay != "" {
			d, err := time.ParseDuration(in.Delay)
			if err != nil {
				writeError(w, http.StatusBadRequest, "delay: "+err.Error())
				return
			}
			f.Delay = d
		}
		if err := s.AddFault(f); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{"faults": s.faultsJSON()})
	})
	mux.HandleFunc("GET /sandbox/faults", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"faults": s.faultsJSON()})
	})
	mux.HandleFunc("DELETE /sandbox/faults", func(w http.ResponseWriter, r *http.Request) {
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /sandbox/clock", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Advance string `json:"advance"`
		}
		if !readJSON(w, r, &in) {
			return
		}
		d, err := time.ParseDuration(in.Advance)
		if err != nil {
			writeError(w, http.StatusBadRequest, "advance: "+err.Error())
			return
		}
		s.Advance(d)
		writeJSON(w, http.StatusOK, map[string]any{"now": s.Now().UTC()})
	})
	mux.HandleFunc("POST /sandbox/ewaybills", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			IRN    string `json:"irn"`
			Active bool   `json:"active"`
		}
		if !readJSON(w, r, &in) {
			return
		}
		if err := s.SetEWayBill(in.IRN, in.Active); err != nil {
			writeError(w, http.StatusNotFound, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, in)
	})
	mux.HandleFunc("POST /sandbox/tokens/expire", func(w http.ResponseWriter, r *http.Request) {
		s.ExpireTokens()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /sandbox/certificate", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-pem-file")
		_, _ = w.Write(s.cfg.Keys.CertificatePEM())
	})
	mux.HandleFunc("GET /sandbox/public-key", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-pem-file")
		_, _ = w.Write(s.cfg.Keys.PublicKeyPEM())
	})
}

// faultJSON is a fault as the controls show it, the delay as text.
type faultJSON struct {
	Fault
	Delay string `json:"delay,omitempty"`
}

// faultsJSON returns the faults set as the controls show them.
func (s *Server) faultsJSON() []faultJSON {
	out := []faultJSON{}
	for _, f := range s.Faults() {
		fj := faultJSON{Fault: f}
		if f.Delay > 0 {
			fj.Delay = f.Delay.String()
		}
		out = append(out, fj)
	}
	return out
}

// nonNil returns rs, or an empty list for nil, so that JSON shows [].
func nonNil(rs []Registration) []Registration {
	if rs == nil {
		return []Registration{}
	}
	return rs
}

// readJSON decodes r's body into v; on failure it answers 400 and returns
// false.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "body: "+err.Error())
		return false
	}
	return true
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers status with {"error": {"message": msg}}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"message": msg}})
}
