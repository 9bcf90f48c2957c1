package irpsandbox

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/irp"
)

// The protocol's side of the sandbox: the envelope, authentication,
// sessions and the fault wrapper every call goes through.

// maxBody bounds a request: the IRP takes payloads of up to 2 MB.
const maxBody = 4 << 20

// Handler returns the sandbox's HTTP handler: the IRP's calls and the
// sandbox's controls under /sandbox/ (control.go).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST "+irp.PathAuth, s.call(einvoice.OpAuth, s.authenticate))
	mux.Handle("POST "+irp.PathInvoice, s.call(einvoice.OpRegister, s.session(s.generate)))
	mux.Handle("POST "+irp.PathCancel, s.call(einvoice.OpCancel, s.session(s.cancel)))
	mux.Handle("GET "+irp.PathByDocument, s.call(einvoice.OpLookup, s.session(s.byDocument)))
	mux.Handle("GET "+irp.PathByIRN+"{irn}", s.call(einvoice.OpGet, s.session(s.byIRN)))
	s.controls(mux)
	return mux
}

// answer is what a call answers: Data (already encrypted, or the auth
// object) on success, the errors and InfoDtls otherwise.
type answer struct {
	data    any
	details []einvoice.ErrorDetail
	info    []irp.InfoDetail
}

// refuse returns a failure answer with one error.
func refuse(code, message string) answer {
	return answer{details: []einvoice.ErrorDetail{{Code: code, Message: message}}}
}

// call wraps an operation with op's faults and writes its answer as the
// IRP's envelope (HTTP 200 either way, as the IRP answers).
func (s *Server) call(op einvoice.Op, act func(*http.Request) answer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := s.fault(op)
		mode := FaultMode("")
		if f != nil {
			mode = f.Mode
		}
		if mode == DropBefore {
			drop(w)
			return
		}
		if mode == DelayBefore {
			time.Sleep(f.Delay) // the request arrives late: act even if the client has gone
		}
		a := act(r)
		env := irp.Answer{Status: 1}
		if a.details != nil {
			env = irp.Answer{Status: 0, ErrorDetails: a.details, InfoDtls: a.info}
		} else {
			b, err := json.Marshal(a.data)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			env.Data = b
		}
		body, err := json.Marshal(env)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		switch mode {
		case DropAfter:
			drop(w)
			return
		case DelayAfter:
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// drop closes the request's connection without an answer.
func drop(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // HTTP/2: abort the stream
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// session is one API user's authentication for one GSTIN.
type session struct {
	token  string
	user   string
	gstin  string
	sek    []byte
	expiry time.Time
}

// clientOK reports whether r carries the integrator's client id and secret.
func (s *Server) clientOK(r *http.Request) bool {
	return r.Header.Get(irp.HeaderClientID) == s.cfg.ClientID && r.Header.Get(irp.HeaderClientSecret) == s.cfg.ClientSecret
}

// authenticate answers the authentication call: the credentials decrypted
// with the encryption key, checked, and a token with its session key
// (encrypted with the client's app key). Within a token's life it answers
// the same token, unless asked to force a new one in its last ten minutes.
func (s *Server) authenticate(r *http.Request) answer {
	gstin := r.Header.Get(irp.HeaderGSTIN)
	switch {
	case !s.clientOK(r):
		return refuse("1010", "Invalid Client-ID/Client-Secret")
	case gstin == "":
		return refuse("1004", "Header GSTIN is required")
	}
	var req irp.Request
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&req); err != nil {
		return refuse("1007", "Authentication failed: "+err.Error())
	}
	enc, err := base64.StdEncoding.DecodeString(req.Data)
	if err != nil {
		return refuse("1007", "Authentication failed: Data is not base64")
	}
	b64, err := rsa.DecryptPKCS1v15(nil, s.cfg.Keys.Encryption, enc) //nolint:staticcheck // SA1019: the IRP's protocol prescribes PKCS #1 v1.5
	if err != nil {
		return refuse("1013", "Decryption of password failed")
	}
	plain, err := base64.StdEncoding.DecodeString(string(b64))
	if err != nil {
		return refuse("1007", "Authentication failed: the credentials are not base64")
	}
	var p irp.AuthPayload
	if err := json.Unmarshal(plain, &p); err != nil {
		return refuse("1007", "Authentication failed: "+err.Error())
	}
	if pw, ok := s.cfg.Users[p.UserName]; !ok || pw != p.Password {
		return refuse("1008", "Invalid login credentials")
	}
	appKey, err := base64.StdEncoding.DecodeString(p.AppKey)
	if err != nil || len(appKey) != irp.KeySize {
		return refuse("1016", "Decryption of App Key failed")
	}
	sess, err := s.sessionFor(p.UserName, gstin, p.ForceRefreshAccessToken)
	if err != nil {
		return refuse("1007", err.Error())
	}
	sek, err := irp.EncryptECB(appKey, sess.sek)
	if err != nil {
		return refuse("1016", "Decryption of App Key failed")
	}
	return answer{data: irp.AuthData{ClientID: s.cfg.ClientID, UserName: p.UserName, AuthToken: sess.token,
		Sek: base64.StdEncoding.EncodeToString(sek), TokenExpiry: irp.FormatTime(sess.expiry)}}
}

// forceWindow is how long before its expiry a token may be renewed early.
const forceWindow = 10 * time.Minute

// sessionFor returns user's live session for gstin, or a new one when there
// is none, it has expired, or force asks for one in its last minutes.
func (s *Server) sessionFor(user, gstin string, force bool) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	key := user + "\x00" + gstin
	if cur := s.current[key]; cur != nil && now.Before(cur.expiry) && !(force && cur.expiry.Sub(now) <= forceWindow) {
		return cur, nil
	}
	sess := &session{user: user, gstin: gstin, sek: make([]byte, irp.KeySize), expiry: now.Add(s.cfg.TokenLife).Truncate(time.Second)}
	tok := make([]byte, 18)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	if _, err := rand.Read(sess.sek); err != nil {
		return nil, err
	}
	sess.token = base64.RawURLEncoding.EncodeToString(tok)
	if old := s.current[key]; old != nil {
		delete(s.sessions, old.token)
	}
	s.current[key], s.sessions[sess.token] = sess, sess
	return sess, nil
}

// sessionCall is an operation of an authenticated session: the request,
// its session and its decrypted payload (nil for a GET).
type sessionCall func(r *http.Request, sess *session, plain []byte) answer

// session checks r's client, token, user and GSTIN (1005 when the token is
// unknown, expired or another user's), decrypts its payload and runs op;
// the answer's data is encrypted with the session key.
func (s *Server) session(op sessionCall) func(*http.Request) answer {
	return func(r *http.Request) answer {
		if !s.clientOK(r) {
			return refuse("1010", "Invalid Client-ID/Client-Secret")
		}
		s.mu.Lock()
		sess := s.sessions[r.Header.Get(irp.HeaderAuthToken)]
		live := sess != nil && s.now().Before(sess.expiry)
		s.mu.Unlock()
		if !live || sess.user != r.Header.Get(irp.HeaderUserName) || sess.gstin != r.Header.Get(irp.HeaderGSTIN) {
			return refuse("1005", "Invalid Token")
		}
		var plain []byte
		if r.Method == http.MethodPost {
			var req irp.Request
			if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&req); err != nil {
				return refuse("2140", "Error while validating invoice: the request is not {\"Data\": …}")
			}
			ct, err := base64.StdEncoding.DecodeString(req.Data)
			if err == nil {
				plain, err = irp.DecryptECB(sess.sek, ct)
			}
			if err != nil {
				return refuse("2140", "Error while validating invoice: Data does not decrypt with the session key")
			}
		}
		a := op(r, sess, plain)
		if a.details != nil {
			return a
		}
		b, err := json.Marshal(a.data)
		if err != nil {
			return refuse("2141", err.Error())
		}
		ct, err := irp.EncryptECB(sess.sek, b)
		if err != nil {
			return refuse("2141", err.Error())
		}
		return answer{data: base64.StdEncoding.EncodeToString(ct)}
	}
}

// decodeStrict decodes b into v, refusing unknown fields and trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}
