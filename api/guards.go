package api

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/apperr"
)

// Every route, of the API and of the console, is registered through one
// chain of guards chosen by its route class (docs/threat-model.md): the
// class table below says which guards a class gets, and the route
// inventory tests fail for a route not wrapped by the guards its class
// requires. Adding a guard is one entry in Guards' order, one line per
// class that needs it, and its middleware in apiGuard (and in the
// console's own table, which refuses to start on a guard it does not know).

// RouteClass is the kind of a route, which decides its guards and limits.
type RouteClass string

// The route classes.
const (
	ClassHealth          RouteClass = "health"           // /healthz, /readyz, /openapi.yaml: no key, no data
	ClassMetrics         RouteClass = "metrics"          // /metrics, /debug/stats
	ClassReceipt         RouteClass = "receipt"          // /r/{public_id}: the id is the capability
	ClassAPIRead         RouteClass = "api-read"         // a key's reads
	ClassAPIList         RouteClass = "api-list"         // a key's lists of invoices or events, a page at a time
	ClassAPIWrite        RouteClass = "api-write"        // a key's writes (issue, cancel, create)
	ClassExport          RouteClass = "export"           // the audit export
	ClassDevice          RouteClass = "device"           // leases and offline uploads
	ClassConsoleLogin    RouteClass = "console-login"    // the sign-in form and static files
	ClassConsolePage     RouteClass = "console-page"     // a signed-in page or form
	ClassConsoleDownload RouteClass = "console-download" // a console download (the audit export)
	ClassConsoleVerify   RouteClass = "console-verify"   // the console's chain verification
)

// Guard is one layer of the chain.
type Guard string

// The guards, in the order they run (outermost first).
const (
	// GuardText refuses (400, naming the parameter) query names and
	// values, path parameters and headers that are not UTF-8 text without
	// NUL bytes, before anything reads them (CheckText).
	GuardText Guard = "text"
	// GuardDeadline bounds the request's work by its class's deadline.
	GuardDeadline Guard = "deadline"
	// GuardBodyCap cuts the body at the class's cap before anything reads it.
	GuardBodyCap Guard = "body-cap"
	// GuardAuth authenticates the key (or the console session).
	GuardAuth Guard = "auth"
	// GuardKeyRate spends one of the key's requests (serve --rate-limit).
	GuardKeyRate Guard = "key-rate"
	// GuardScope checks the route's scope (after the rate, so that a
	// refused request still counts).
	GuardScope Guard = "scope"
	// GuardBudget takes a slot of the expensive-read budget of the class's
	// kind (ClassLimits.Budget; slots.go), per seller and in all: an
	// export slot until the answer is sent, a list slot until the page is
	// built.
	GuardBudget Guard = "budget"
)

// Budget is a kind of slot of the expensive-read budget (slots.go).
type Budget string

// The kinds of the expensive-read budget.
const (
	BudgetExport Budget = "export" // exports, console downloads and verifies: serve --max-exports
	BudgetList   Budget = "list"   // pages of invoices and events: serve --max-list-reads
)

// Guards lists every guard in chain order.
var Guards = []Guard{GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope, GuardBudget}

// ClassLimits are a route class's guards and limits.
type ClassLimits struct {
	Guards   []Guard
	Deadline time.Duration // 0: the server's request timeout (--request-timeout)
	MaxBody  int64         // bytes
	Budget   Budget        // the slots GuardBudget takes
}

// classes is the class table: the one place a class's guards are chosen.
var classes = map[RouteClass]ClassLimits{
	ClassHealth:          {Guards: []Guard{GuardText, GuardDeadline, GuardBodyCap}, Deadline: 5 * time.Second, MaxBody: 0},
	ClassMetrics:         {Guards: []Guard{GuardText, GuardDeadline, GuardBodyCap}, Deadline: 10 * time.Second, MaxBody: 0},
	ClassReceipt:         {Guards: []Guard{GuardText, GuardDeadline, GuardBodyCap}, MaxBody: 0}, // failures spend the address's budget (ratelimit.go)
	ClassAPIRead:         {Guards: []Guard{GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope}, MaxBody: smallBodyMax},
	ClassAPIList:         {Guards: []Guard{GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope, GuardBudget}, MaxBody: smallBodyMax, Budget: BudgetList},
	ClassAPIWrite:        {Guards: []Guard{GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope}, MaxBody: batchBodyMax},
	ClassExport:          {Guards: []Guard{GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope, GuardBudget}, Deadline: exportTimeout, MaxBody: 0, Budget: BudgetExport},
	ClassDevice:          {Guards: []Guard{GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope}, MaxBody: batchBodyMax},
	ClassConsoleLogin:    {Guards: []Guard{GuardText, GuardDeadline, GuardBodyCap}, MaxBody: consoleFormMax},
	ClassConsolePage:     {Guards: []Guard{GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope}, MaxBody: consoleFormMax},
	ClassConsoleDownload: {Guards: []Guard{GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope, GuardBudget}, Deadline: exportTimeout, MaxBody: 0, Budget: BudgetExport},
	ClassConsoleVerify:   {Guards: []Guard{GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope, GuardBudget}, Deadline: verifyTimeout, MaxBody: 0, Budget: BudgetExport},
}

// consoleFormMax bounds a console form (a key, a token, a reason).
const consoleFormMax = 8 << 10

// verifyTimeout bounds one chain verification (a million-invoice
// series-year takes about 10 s).
const verifyTimeout = 2 * time.Minute

// Limits returns the guards and limits of class; it panics on a class
// not in the table (a programming error, caught when routes register).
func Limits(class RouteClass) ClassLimits {
	l, ok := classes[class]
	if !ok {
		panic(fmt.Sprintf("api: route class %q is not in the class table", class))
	}
	return l
}

// DeadlineOf returns the deadline of class on this server.
func (s *Server) DeadlineOf(class RouteClass) time.Duration {
	if d := Limits(class).Deadline; d > 0 {
		return d
	}
	return s.timeout
}

// RouteInfo is a registered route with the guards it is wrapped in.
type RouteInfo struct {
	Method, Path string
	Class        RouteClass
	Guards       []Guard
}

// Routes returns the API's routes as registered through the chain.
func (s *Server) Routes() []RouteInfo { return append([]RouteInfo(nil), s.inventory...) }

const (
	ctxPrincipal = "invoiced.principal"
	ctxRelease   = "invoiced.release" // GuardBudget's slot, func()
)

// route registers h for method and path in class, wrapped in the class's
// guards; need is the scope GuardAuth checks (the handler may check more).
func (s *Server) route(e *echo.Echo, method, path string, class RouteClass, need apikey.Scopes, h echo.HandlerFunc) {
	l := Limits(class)
	var applied []Guard
	for i := len(Guards) - 1; i >= 0; i-- {
		g := Guards[i]
		if !hasGuard(l.Guards, g) {
			continue
		}
		h = s.apiGuard(g, class, need)(h)
		applied = append([]Guard{g}, applied...)
	}
	e.Add(method, path, h)
	s.inventory = append(s.inventory, RouteInfo{Method: method, Path: path, Class: class, Guards: applied})
}

func hasGuard(gs []Guard, g Guard) bool {
	for _, x := range gs {
		if x == g {
			return true
		}
	}
	return false
}

// apiGuard returns the middleware of guard g for a route of class that
// needs scope need.
func (s *Server) apiGuard(g Guard, class RouteClass, need apikey.Scopes) echo.MiddlewareFunc {
	switch g {
	case GuardText:
		return guardText
	case GuardDeadline:
		d := s.DeadlineOf(class)
		return func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				r := c.Request()
				ctx, cancel := context.WithTimeout(r.Context(), d)
				defer cancel()
				c.SetRequest(r.WithContext(ctx))
				return next(c)
			}
		}
	case GuardBodyCap:
		max := Limits(class).MaxBody
		return func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				r := c.Request()
				if r.Body != nil && r.Body != http.NoBody {
					r.Body = http.MaxBytesReader(c.Response(), r.Body, max)
				}
				return next(c)
			}
		}
	case GuardAuth:
		return func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				p, err := s.authenticate(c.Request(), c.Request().Header.Get("Authorization"))
				if err != nil {
					return err
				}
				c.Set(ctxSeller, string(p.Seller.GSTIN))
				c.Set(ctxPrincipal, p)
				ledgerOf(c.Request().Context()).setSeller(p.Seller.ID)
				return next(c)
			}
		}
	case GuardKeyRate:
		return func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				p, _ := c.Get(ctxPrincipal).(apikey.Principal)
				if err := s.TakeKeyRate(c.Response(), p.Prefix); err != nil {
					return err
				}
				return next(c)
			}
		}
	case GuardScope:
		return func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				if p, _ := c.Get(ctxPrincipal).(apikey.Principal); !p.Scopes.Has(need) {
					return missingScopes(need, p.Scopes)
				}
				return next(c)
			}
		}
	case GuardBudget:
		return func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				p, _ := c.Get(ctxPrincipal).(apikey.Principal)
				release, err := s.ExpensiveRead(c.Request().Context(), class, p.Seller.ID)
				if err != nil {
					return err
				}
				defer release()
				c.Set(ctxRelease, release) // a page gives it back before it is sent
				return next(c)
			}
		}
	}
	panic(fmt.Sprintf("api: no middleware for guard %q", g))
}

// missingScopes returns apikey.ErrForbidden naming the scopes of need
// that have lacks.
func missingScopes(need, have apikey.Scopes) error {
	return apperr.Errorf(apikey.ErrForbidden, "the API key lacks the %s scope this operation needs", strings.Join((need&^have).Names(), " and "))
}

// TakeKeyRate spends one request of the key with prefix under serve
// --rate-limit (nothing when it is off). It fails with a rate_limited
// error (429), after setting Retry-After on w, when the key has none left.
func (s *Server) TakeKeyRate(w http.ResponseWriter, prefix string) error {
	if s.keyRate == nil {
		return nil
	}
	ok, wait := s.keyRate.take(prefix, s.now())
	if ok {
		return nil
	}
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return apperr.Errorf(errKeyRateLimited, "this API key may make %s requests a second (serve --rate-limit); retry in %d s", strconv.FormatFloat(s.keyRate.rate, 'f', -1, 64), secs)
}

// ExpensiveRead takes a slot of the expensive-read budget for seller, of
// the kind class takes (ClassLimits.Budget; slots.go), and returns the
// function that gives it back (once; later calls do nothing). An export
// slot is refused at once, a list slot after waiting up to 2 s (or until
// ctx ends) for one: with a too_many_exports or too_many_reads error
// (429), holding nothing. It panics for a class without a budget.
func (s *Server) ExpensiveRead(ctx context.Context, class RouteClass, seller int64) (release func(), err error) {
	switch Limits(class).Budget {
	case BudgetExport:
		return s.exports.acquire(ctx, seller)
	case BudgetList:
		return s.lists.acquire(ctx, seller)
	}
	panic(fmt.Sprintf("api: route class %q takes no slot of the expensive-read budget", class))
}

// SendExport writes an export through the API's export path: write fills
// a spool file (inside its own database transaction, which ends before
// the first byte is sent), then the file is sent to w with name and ctype,
// each 32 KiB chunk within the stall timeout. An error before the first
// byte is returned (the caller answers it); a client that stops reading,
// or any failure after, aborts the connection (http.ErrAbortHandler), so
// a cut file never looks complete. The caller holds an ExpensiveRead slot.
func (s *Server) SendExport(w http.ResponseWriter, r *http.Request, name, ctype string, write func(io.Writer) error) error {
	sp, err := newSpool(s.spoolDir)
	if err != nil {
		return err
	}
	defer sp.Close()
	if err := write(sp); err != nil {
		return err
	}
	size, err := sp.rewind()
	if err != nil {
		return err
	}
	w.Header().Set(echo.HeaderContentType, ctype)
	w.Header().Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	w.Header().Set(echo.HeaderContentLength, strconv.FormatInt(size, 10))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if err := sendStalling(r.Context(), w, sp.f, s.exportStall); err != nil {
		s.log.Info("export cut off", "err", err, "path", r.URL.Path)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// RequiredGuards is the policy the route inventory tests hold every route
// to (docs/threat-model.md): the guards a route of each class must be
// wrapped in. It is kept apart from the class table so that a class
// losing a guard there fails the tests instead of passing silently.
var RequiredGuards = map[RouteClass][]Guard{
	ClassHealth:          {GuardText, GuardDeadline, GuardBodyCap},
	ClassMetrics:         {GuardText, GuardDeadline, GuardBodyCap},
	ClassReceipt:         {GuardText, GuardDeadline, GuardBodyCap},
	ClassAPIRead:         {GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope},
	ClassAPIList:         {GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope, GuardBudget},
	ClassAPIWrite:        {GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope},
	ClassDevice:          {GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope},
	ClassExport:          {GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope, GuardBudget},
	ClassConsoleLogin:    {GuardText, GuardDeadline, GuardBodyCap},
	ClassConsolePage:     {GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope},
	ClassConsoleDownload: {GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope, GuardBudget},
	ClassConsoleVerify:   {GuardText, GuardDeadline, GuardBodyCap, GuardAuth, GuardKeyRate, GuardScope, GuardBudget},
}

// RequiredGuardsMissing returns the guards RequiredGuards asks of r's
// class that r is not wrapped in; every guard when the class has no
// policy.
func RequiredGuardsMissing(r RouteInfo) []Guard {
	need, ok := RequiredGuards[r.Class]
	if !ok {
		return Guards
	}
	var missing []Guard
	for _, g := range need {
		if !hasGuard(r.Guards, g) {
			missing = append(missing, g)
		}
	}
	return missing
}
