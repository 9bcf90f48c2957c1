package console

import (
	"bytes"
	"context"
	"embed"
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

	// Chain returns the guard chain of a route of class, the one the
	// API's routes are served through (api/guards.go), with the
	// console's authentication (the session).
	Chain(class api.RouteClass, need apikey.Scopes, params []string, authn api.Authenticator) api.Chain
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
	c.handle("GET /console/static/", api.ClassConsoleLogin, 0, http.StripPrefix("/console/static/", http.FileServerFS(static)).ServeHTTP)
	c.handle("GET /console/login", api.ClassConsoleLogin, 0, c.loginForm)
	c.handle("POST /console/login", api.ClassConsoleLogin, 0, c.login)
	c.handle("POST /console/logout", api.ClassConsolePage, 0, c.logout)
	c.handle("GET /console/{$}", api.ClassConsolePage, apikey.CanRead, c.overview)
	c.handle("GET /console/series/{code}/{fy}", api.ClassConsolePage, apikey.CanRead, c.seriesYear)
	c.handle("GET /console/series/{code}/{fy}/check", api.ClassConsoleVerify, apikey.CanRead, c.seriesYearCheck)
	c.handle("GET /console/series/{code}/{fy}/audit", api.ClassConsoleDownload, apikey.CanRead, c.auditDownload)
	c.handle("GET /console/invoices/{id}/cancel", api.ClassConsolePage, apikey.CanIssue, c.cancelForm)
	c.handle("POST /console/invoices/{id}/cancel", api.ClassConsolePage, apikey.CanIssue, c.cancel)
	c.handle("GET /console/gstr1", api.ClassConsolePage, apikey.CanRead, c.gstr1)
	c.handle("GET /console/gstr1.json", api.ClassConsolePage, apikey.CanRead, c.gstr1JSON)
	c.handle("GET /console/find", api.ClassConsolePage, apikey.CanRead, c.find)
	c.handle("GET /console/periods/{fp}/lock", api.ClassConsolePage, apikey.CanManage, c.lockForm)
	c.handle("POST /console/periods/{fp}/lock", api.ClassConsolePage, apikey.CanManage, c.lock)
	c.handle("GET /console/leases", api.ClassConsolePage, apikey.CanRead, c.leases)
	c.handle("GET /console/leases/{code}/end", api.ClassConsolePage, apikey.CanManage, c.leaseEndForm)
	c.handle("POST /console/leases/{code}/end", api.ClassConsolePage, apikey.CanManage, c.leaseEnd)
	c.handle("GET /console/leases/{code}/settle", api.ClassConsolePage, apikey.CanManage, c.leaseSettleForm)
	c.handle("POST /console/leases/{code}/settle", api.ClassConsolePage, apikey.CanManage, c.leaseSettle)
	c.handle("GET /console/verify", api.ClassConsoleVerify, apikey.CanRead, c.verify)
	c.handle("GET /console/e-invoices", api.ClassConsolePage, apikey.CanRead, c.eInvoices)
	c.handle("/console/", api.ClassConsoleLogin, 0, func(w http.ResponseWriter, r *http.Request) {
		c.page(w, r, http.StatusNotFound, "error", nil, "Not found", errorView{Message: "There is no such page."})
	})
}

// handle registers h for pattern ("METHOD /path" or "/path") in route
// class, served through the class's guard chain (api.Server.Chain), the
// one the API's routes are served through, with the session as the
// caller's authentication; need is the scope GuardScope requires (0 for
// none). A refusal is answered as a page (refuse).
func (c *Console) handle(pattern string, class api.RouteClass, need apikey.Scopes, h http.HandlerFunc) {
	ch := c.keys.Chain(class, need, wildcards(pattern), c.authenticate)
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { ch.Serve(w, r, h, c.refuse) })
	method, path, found := strings.Cut(pattern, " ")
	if !found {
		method, path = "*", pattern
	}
	c.routes = append(c.routes, api.RouteInfo{Method: method, Path: path, Class: class, Guards: ch.Guards()})
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
