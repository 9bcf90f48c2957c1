package console

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Keys checks API keys; *api.Server satisfies it.
type Keys interface {
	// Authenticate returns the principal of a whole key sent with a
	// request (whose client address pays for a failure).
	Authenticate(r *http.Request, key string) (apikey.Principal, error)
	// KeyPrincipal returns the principal of the live key with prefix
	// (apikey.ErrUnauthorized once it is revoked).
	KeyPrincipal(ctx context.Context, prefix string) (apikey.Principal, error)
	// Options returns the options invoices are cancelled with.
	Options() series.Options
	// FailureAllowed refuses (429) a request whose client address has
	// spent its failures; ChargeFailure spends one, for a session cookie
	// that names no live session.
	FailureAllowed(r *http.Request) error
	ChargeFailure(r *http.Request)

	// The guard chain the console shares with the API (api/guards.go).

	// DeadlineOf returns the deadline of a route class.
	DeadlineOf(class api.RouteClass) time.Duration
	// TakeKeyRate spends one request of the key with prefix (serve
	// --rate-limit); a rate_limited error (429) when none is left.
	TakeKeyRate(w http.ResponseWriter, prefix string) error
	// ExpensiveRead takes one of the seller's expensive-read slots of
	// the kind the route class takes (api.ClassLimits.Budget); a 429 when
	// none is free.
	ExpensiveRead(ctx context.Context, class api.RouteClass, seller int64) (release func(), err error)
	// SendExport spools what write writes (its transaction ends before the
	// first byte is sent) and sends it as attachment name, within the
	// stall timeout.
	SendExport(w http.ResponseWriter, r *http.Request, name, ctype string, write func(io.Writer) error) error
}

// Config configures a Console.
type Config struct {
	Pool *pgxpool.Pool // required
	Keys Keys          // required
	// Logger receives internal errors; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// CookieSecure marks the session cookie Secure even on plain HTTP
	// (behind a TLS-terminating proxy); it is Secure anyway over TLS.
	CookieSecure bool
}

// Console serves the web console under /console/. Make one with New.
type Console struct {
	pool         *pgxpool.Pool
	keys         Keys
	log          *slog.Logger
	now          func() time.Time
	cookieSecure bool
	pages        map[string]*template.Template
	mux          *http.ServeMux // reached only through handle, which records routes
	routes       []api.RouteInfo
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// New returns a Console for cfg. It does not touch the database.
func New(cfg Config) *Console {
	c := &Console{pool: cfg.Pool, keys: cfg.Keys, log: cfg.Logger, now: cfg.Now, cookieSecure: cfg.CookieSecure}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.pages = parsePages()
	c.mux = http.NewServeMux()
	c.register()
	return c
}

// parsePages returns each page template joined with the layout.
func parsePages() map[string]*template.Template {
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		pages[base] = template.Must(template.Must(layout.Clone()).ParseFS(templateFS, n))
	}
	return pages
}

// register registers every console route through handle.
func (c *Console) register() {
	static, _ := fs.Sub(staticFS, "static")
	c.handle("GET /console/static/", api.ClassConsoleLogin, "", http.StripPrefix("/console/static/", http.FileServerFS(static)).ServeHTTP)
	c.handle("GET /console/login", api.ClassConsoleLogin, "", c.loginForm)
	c.handle("POST /console/login", api.ClassConsoleLogin, "", c.login)
	c.handle("POST /console/logout", api.ClassConsolePage, "", c.logout)
	c.handle("GET /console/{$}", api.ClassConsolePage, apikey.ScopeRead, c.overview)
	c.handle("GET /console/series/{code}/{fy}", api.ClassConsolePage, apikey.ScopeRead, c.seriesYear)
	c.handle("GET /console/series/{code}/{fy}/check", api.ClassConsoleVerify, apikey.ScopeRead, c.seriesYearCheck)
	c.handle("GET /console/series/{code}/{fy}/audit", api.ClassConsoleDownload, apikey.ScopeRead, c.auditDownload)
	c.handle("GET /console/invoices/{id}/cancel", api.ClassConsolePage, apikey.ScopeIssue, c.cancelForm)
	c.handle("POST /console/invoices/{id}/cancel", api.ClassConsolePage, apikey.ScopeIssue, c.cancel)
	c.handle("GET /console/gstr1", api.ClassConsolePage, apikey.ScopeRead, c.gstr1)
	c.handle("GET /console/gstr1.json", api.ClassConsolePage, apikey.ScopeRead, c.gstr1JSON)
	c.handle("GET /console/find", api.ClassConsolePage, apikey.ScopeRead, c.find)
	c.handle("GET /console/periods/{fp}/lock", api.ClassConsolePage, apikey.ScopeManage, c.lockForm)
	c.handle("POST /console/periods/{fp}/lock", api.ClassConsolePage, apikey.ScopeManage, c.lock)
	c.handle("GET /console/leases", api.ClassConsolePage, apikey.ScopeRead, c.leases)
	c.handle("GET /console/leases/{code}/end", api.ClassConsolePage, apikey.ScopeManage, c.leaseEndForm)
	c.handle("POST /console/leases/{code}/end", api.ClassConsolePage, apikey.ScopeManage, c.leaseEnd)
	c.handle("GET /console/leases/{code}/settle", api.ClassConsolePage, apikey.ScopeManage, c.leaseSettleForm)
	c.handle("POST /console/leases/{code}/settle", api.ClassConsolePage, apikey.ScopeManage, c.leaseSettle)
	c.handle("GET /console/verify", api.ClassConsoleVerify, apikey.ScopeRead, c.verify)
	c.handle("GET /console/e-invoices", api.ClassConsolePage, apikey.ScopeRead, c.eInvoices)
	c.handle("/console/", api.ClassConsoleLogin, "", func(w http.ResponseWriter, r *http.Request) {
		c.page(w, r, http.StatusNotFound, "error", nil, "Not found", errorView{Message: "There is no such page."})
	})
}

// handle registers h for pattern ("METHOD /path" or "/path") in route
// class, wrapped in the class's guards (api.Limits) in the chain's order;
// scope is what GuardScope requires ("" for none). It panics on a guard
// the console has no middleware for, so a guard added to the class table
// cannot be skipped here.
func (c *Console) handle(pattern string, class api.RouteClass, scope string, h http.HandlerFunc) {
	l := api.Limits(class)
	var applied []api.Guard
	for i := len(api.Guards) - 1; i >= 0; i-- {
		g := api.Guards[i]
		if !slices.Contains(l.Guards, g) {
			continue
		}
		h = c.guard(g, class, scope, wildcards(pattern))(h)
		applied = append([]api.Guard{g}, applied...)
	}
	c.mux.HandleFunc(pattern, h)
	method, path, found := strings.Cut(pattern, " ")
	if !found {
		method, path = "*", pattern
	}
	c.routes = append(c.routes, api.RouteInfo{Method: method, Path: path, Class: class, Guards: applied})
}

// Routes returns the console's routes with the guards each is wrapped in.
func (c *Console) Routes() []api.RouteInfo { return slices.Clone(c.routes) }

// wildcards returns the names of pattern's path wildcards ("{code}",
// "{id...}"; not "{$}"), in order.
func wildcards(pattern string) []string {
	var names []string
	for rest := pattern; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			return names
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return names
		}
		if name := strings.TrimSuffix(rest[i+1:i+j], "..."); name != "$" {
			names = append(names, name)
		}
		rest = rest[i+j+1:]
	}
}

// guard returns the console's middleware of guard g for a route of class
// needing scope, whose path wildcards are named params.
func (c *Console) guard(g api.Guard, class api.RouteClass, scope string, params []string) func(http.HandlerFunc) http.HandlerFunc {
	switch g {
	case api.GuardText:
		return func(next http.HandlerFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				values := make([]string, len(params))
				for i, name := range params {
					values[i] = r.PathValue(name)
				}
				if err := api.CheckText(r, params, values); err != nil {
					c.fail(w, r, nil, err)
					return
				}
				next(w, r)
			}
		}
	case api.GuardDeadline:
		d := c.keys.DeadlineOf(class)
		return func(next http.HandlerFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				ctx, cancel := context.WithTimeout(r.Context(), d)
				defer cancel()
				next(w, r.WithContext(ctx))
			}
		}
	case api.GuardBodyCap:
		max := api.Limits(class).MaxBody
		return func(next http.HandlerFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				r.Body = http.MaxBytesReader(w, r.Body, max)
				next(w, r)
			}
		}
	case api.GuardAuth:
		return c.signedIn
	case api.GuardKeyRate:
		return func(next http.HandlerFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				s := sessionOf(r)
				if err := c.keys.TakeKeyRate(w, s.principal.Prefix); err != nil {
					c.fail(w, r, s, err)
					return
				}
				next(w, r)
			}
		}
	case api.GuardScope:
		return func(next http.HandlerFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if scope != "" {
					if err := require(sessionOf(r), scope); err != nil {
						c.fail(w, r, sessionOf(r), err)
						return
					}
				}
				next(w, r)
			}
		}
	case api.GuardBudget:
		return func(next http.HandlerFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				s := sessionOf(r)
				release, err := c.keys.ExpensiveRead(r.Context(), class, s.principal.Seller.ID)
				if err != nil {
					c.fail(w, r, s, err)
					return
				}
				defer release()
				next(w, r)
			}
		}
	}
	panic(fmt.Sprintf("console: no middleware for guard %q", g))
}

// ServeHTTP serves the console's pages (paths under /console/).
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	if !strings.HasPrefix(r.URL.Path, "/console/static/") {
		h.Set("Cache-Control", "no-store")
	}
	c.mux.ServeHTTP(w, r)
}

// view is what every page's layout reads.
type view struct {
	Title  string
	Seller gst.Seller
	CSRF   string
	Nav    string // the nav entry to highlight
	// Read and Manage are the session key's scopes: the layout offers
	// the search and the pages that need them only to a key that has them.
	Read, Manage bool
	Content      any // the page's own data
}

type errorView struct{ Message string }

type loginView struct{ Error, Token string }

// page renders template name with data inside the layout, with status and
// title. s is the session (nil on the sign-in and some error pages).
func (c *Console) page(w http.ResponseWriter, r *http.Request, status int, name string, s *session, title string, data any) {
	v := view{Title: title, Content: data, Nav: name}
	if s != nil {
		v.Seller, v.CSRF = s.principal.Seller, s.csrf
		v.Read, v.Manage = s.principal.Has(apikey.ScopeRead), s.principal.Has(apikey.ScopeManage)
	}
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, "layout.html", v); err != nil {
		c.log.ErrorContext(r.Context(), "console: render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes()) // a failed write means the browser has gone
}

// fail shows err as an error page with the status the API would give it;
// internal errors are logged and shown without detail.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	status, _, msg, internal := api.Problem(err)
	if internal {
		c.log.ErrorContext(r.Context(), "console: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	c.page(w, r, status, "error", s, http.StatusText(status), errorView{Message: msg})
}

// errForbidden is shown when the key lacks a scope.
var errForbidden = apikey.ErrForbidden

// require returns apikey.ErrForbidden unless the session's key has scope.
func require(s *session, scope string) error {
	if !s.principal.Has(scope) {
		return apperr.Errorf(errForbidden, "the API key you signed in with lacks the %q scope this needs", scope)
	}
	return nil
}
