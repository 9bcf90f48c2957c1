package api

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
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
// requires. Each guard is written once (check) and serves both routers:
// echo wraps a route's handler in its Chain (Server.route), the console's
// ServeMux does the same (console.Console.handle); each answers a refusal
// in its own form. Adding a guard is one entry in Guards' order, one line
// per class that needs it, and its case in check.

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

// route registers h for method and path in class on echo, wrapped in the
// class's chain (Chain); need is the scope GuardScope checks (the
// handler may check more). A refusal is returned to echo, which answers
// it as every API error is (errors.go).
func (s *Server) route(e *echo.Echo, method, path string, class RouteClass, need apikey.Scopes, h echo.HandlerFunc) {
	ch := s.Chain(class, need, echoParams(path), nil)
	e.Add(method, path, func(c echo.Context) error {
		r := c.Request()
		for i, name := range c.ParamNames() {
			r.SetPathValue(name, c.ParamValues()[i])
		}
		var err error
		ch.Serve(c.Response(), r, func(_ http.ResponseWriter, r *http.Request) {
			c.SetRequest(r)
			err = h(c)
		}, func(_ http.ResponseWriter, r *http.Request, refusal error) {
			c.SetRequest(r) // the request log names the seller of a refused key
			err = refusal
		})
		return err
	})
	s.inventory = append(s.inventory, RouteInfo{Method: method, Path: path, Class: class, Guards: ch.Guards()})
}

// echoParams returns the names of echo path's parameters (":code" is
// "code", "*" is "*"), in order.
func echoParams(path string) []string {
	var names []string
	for seg := range strings.SplitSeq(path, "/") {
		switch {
		case strings.HasPrefix(seg, ":"):
			names = append(names, seg[1:])
		case seg == "*":
			names = append(names, seg)
		}
	}
	return names
}

func hasGuard(gs []Guard, g Guard) bool {
	return slices.Contains(gs, g)
}

// Authenticator returns the principal of the caller of r, and r as the
// rest of the chain and the handler are to see it (the console's session
// in its context). Its error is the router's refusal, answered by the
// router (Chain.Serve's refuse).
type Authenticator func(w http.ResponseWriter, r *http.Request) (*http.Request, apikey.Principal, error)

// Chain is one route's guards, in chain order, each written once for
// both routers (check): echo's routes (Server.route) and the console's
// ServeMux serve their handlers through it. Make one with Server.Chain.
type Chain struct {
	guards []Guard
	checks []check
}

// check is one guard of a chain. It returns the request the next guard,
// and at last the handler, is to see and what to run once the handler
// has returned (nil: nothing); or the refusal, answered by the router in
// its own form (the API's JSON error, the console's page).
type check func(w http.ResponseWriter, r *http.Request) (*http.Request, func(), error)

// Chain returns the chain of a route of class (its guards in the class
// table, in Guards' order) that needs scope need (GuardScope; 0 for
// none), whose path parameters are named params (GuardText reads their
// values with r.PathValue) and whose caller authn authenticates (GuardAuth;
// nil: the API's bearer key, authenticate).
func (s *Server) Chain(class RouteClass, need apikey.Scopes, params []string, authn Authenticator) Chain {
	if authn == nil {
		authn = s.bearer
	}
	var ch Chain
	for _, g := range Guards {
		if hasGuard(Limits(class).Guards, g) {
			ch.guards = append(ch.guards, g)
			ch.checks = append(ch.checks, s.check(g, class, need, params, authn))
		}
	}
	return ch
}

// Guards returns the chain's guards, outermost first.
func (ch Chain) Guards() []Guard { return slices.Clone(ch.guards) }

// Serve passes r through the chain's guards in order and then calls next
// with the request they leave; or, at the first guard that refuses,
// calls refuse with its error and the request as the guards before it
// left it, and never next. What a guard holds (the deadline, a budget
// slot) is given back when next returns.
func (ch Chain) Serve(w http.ResponseWriter, r *http.Request, next http.HandlerFunc, refuse func(http.ResponseWriter, *http.Request, error)) {
	for _, c := range ch.checks {
		passed, done, err := c(w, r)
		if err != nil {
			refuse(w, r, err)
			return
		}
		if done != nil {
			defer done()
		}
		r = passed
	}
	next(w, r)
}

type (
	principalKey struct{} // GuardAuth's principal, apikey.Principal
	releaseKey   struct{} // GuardBudget's slot, func()
)

// principalOf returns the principal GuardAuth set on r (ok false on a
// route without GuardAuth).
func principalOf(r *http.Request) (p apikey.Principal, ok bool) {
	p, ok = r.Context().Value(principalKey{}).(apikey.Principal)
	return p, ok
}

// bearer is the API's Authenticator: the request's bearer key
// (authenticate).
func (s *Server) bearer(_ http.ResponseWriter, r *http.Request) (*http.Request, apikey.Principal, error) {
	p, err := s.authenticate(r, r.Header.Get("Authorization"))
	return r, p, err
}

// check returns guard g of a chain (Chain says what class, need, params
// and authn are).
func (s *Server) check(g Guard, class RouteClass, need apikey.Scopes, params []string, authn Authenticator) check {
	switch g {
	case GuardText:
		return func(_ http.ResponseWriter, r *http.Request) (*http.Request, func(), error) {
			values := make([]string, len(params))
			for i, name := range params {
				values[i] = r.PathValue(name)
			}
			return r, nil, CheckText(r, params, values)
		}
	case GuardDeadline:
		d := s.DeadlineOf(class)
		return func(_ http.ResponseWriter, r *http.Request) (*http.Request, func(), error) {
			ctx, cancel := context.WithTimeout(r.Context(), d)
			return r.WithContext(ctx), cancel, nil
		}
	case GuardBodyCap:
		max := Limits(class).MaxBody
		return func(w http.ResponseWriter, r *http.Request) (*http.Request, func(), error) {
			if r.Body != nil && r.Body != http.NoBody {
				r.Body = http.MaxBytesReader(w, r.Body, max)
			}
			return r, nil, nil
		}
	case GuardAuth:
		return func(w http.ResponseWriter, r *http.Request) (*http.Request, func(), error) {
			r, p, err := authn(w, r)
			if err != nil {
				return r, nil, err
			}
			NoteSeller(r.Context(), string(p.Seller.GSTIN))
			ledgerOf(r.Context()).setSeller(p.Seller.ID)
			return r.WithContext(context.WithValue(r.Context(), principalKey{}, p)), nil, nil
		}
	case GuardKeyRate:
		return func(w http.ResponseWriter, r *http.Request) (*http.Request, func(), error) {
			p, _ := principalOf(r)
			return r, nil, s.TakeKeyRate(w, p.Prefix)
		}
	case GuardScope:
		return func(_ http.ResponseWriter, r *http.Request) (*http.Request, func(), error) {
			if p, _ := principalOf(r); !p.Scopes.Has(need) {
				return r, nil, missingScopes(need, p.Scopes)
			}
			return r, nil, nil
		}
	case GuardBudget:
		return func(_ http.ResponseWriter, r *http.Request) (*http.Request, func(), error) {
			p, _ := principalOf(r)
			release, err := s.ExpensiveRead(r.Context(), class, p.Seller.ID)
			if err != nil {
				return r, nil, err
			}
			// a page gives it back before it is sent (sendPage)
			return r.WithContext(context.WithValue(r.Context(), releaseKey{}, release)), release, nil
		}
	}
	panic(fmt.Sprintf("api: no check for guard %q", g))
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
