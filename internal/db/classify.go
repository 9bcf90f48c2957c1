package db

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

// Class is what a database failure means to the code that got it.
type Class int

// The classes, from Classify.
const (
	// None: no error, or a failure of no class below (a bug, bad SQL, a
	// check of ours, an unexpected SQLSTATE). It is a fault of ours.
	None Class = iota
	// LockTimeout: a lock wait outlasted lock_timeout (SQLSTATE 55P03).
	// Nothing the statement would have done is done; retry later.
	LockTimeout
	// RowMoved: a counter row was not in the state its block was
	// predicted from (CodeRowMoved); the transaction took nothing.
	RowMoved
	// Unavailable: the database cannot be reached or did not answer in
	// time: connection failures and drops, SQLSTATE class 08, shutdown
	// (57P01–57P03), cancellation (57014), too many connections (53300),
	// any other error that ended the session (severity FATAL or PANIC,
	// but for bad credentials or an unknown database, classes 28 and 3D),
	// and deadlines and cancellations (pool acquire included).
	Unavailable
	// OutcomeUnknown: COMMIT was sent and its answer was lost (a dropped
	// connection, a FATAL, a deadline): the server may have committed.
	OutcomeUnknown
	// Constraint: an integrity constraint refused a row (SQLSTATE class
	// 23); Violated says which.
	Constraint
)

// String returns the class's name, "lock timeout".
func (c Class) String() string {
	switch c {
	case None:
		return "none"
	case LockTimeout:
		return "lock timeout"
	case RowMoved:
		return "row moved"
	case Unavailable:
		return "unavailable"
	case OutcomeUnknown:
		return "outcome unknown"
	case Constraint:
		return "constraint"
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// The SQLSTATEs invoiced raises, every one of them. IV001 to IV005 are
// invoiced_require's (migration 00002): the message says what was
// required, the code which requirement failed. IV003 (a key already
// used), listed in the migration, is no longer raised: a used key is found
// by ClaimKeys' lookup instead. IV017 is the lease guard's, the trigger
// series_counters_lease_guard (migrations 00015 and 00020).
const (
	CodeRowMoved      = "IV001" // a counter row is not in the predicted state
	CodeKeyHeld       = "IV002" // an idempotency key is held by another transaction
	CodeOutOfWindow   = "IV004" // an invoice date is outside the backdating window by the database's clock
	CodePeriodLocked  = "IV005" // an invoice is dated in a locked month
	CodeEventIDsShort = "IV006" // invoiced_issue_rows (00029, 00041's _v2) was given too few event ids for a subscribed seller
	CodeLeased        = "IV017" // a leased series' counter row written by a transaction that does not name the lease
)

// Classify returns the class of err, None for nil. It looks through
// wrapping (fmt.Errorf's %w, *apperr.Error's cause), and an error this
// package's sentinels (ErrLockTimeout, ErrRowMoved, ErrOutcomeUnknown)
// derive from keeps their class.
func Classify(err error) Class {
	if err == nil {
		return None
	}
	if c := translated(err); c != None {
		return c
	}
	var te *TxError
	if errors.As(err, &te) && te.Op == OpCommit {
		return ClassifyCommit(te.Err)
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return classifyPg(pg)
	}
	if connectionLost(err) {
		return Unavailable
	}
	return None
}

// ClassifyCommit returns the class of err, the failure of a COMMIT (or of a
// pipeline that ends in one): OutcomeUnknown when the answer to it was
// lost, Classify's class otherwise. Only a definite answer means nothing
// was committed: the server answered ROLLBACK, or an ERROR (a deferred
// constraint, a serialization failure, a statement of the pipeline before
// COMMIT) ended the transaction.
func ClassifyCommit(err error) Class {
	if err != nil && translated(err) == None && !errors.Is(err, pgx.ErrTxCommitRollback) && sessionLost(err) {
		return OutcomeUnknown
	}
	return Classify(err)
}

// ClassifyDelegated returns the class of err, the failure of a call that
// commits inside the statement before it answers (invoiced_issue_rows_v2
// delegated to a Citus worker): OutcomeUnknown unless the error says the
// call took nothing, Classify's class otherwise. On Citus the call commits
// on the worker and the coordinator relays the answer: a connection to the
// worker lost, or a cancel (a statement timeout, a caller gone) that
// reaches the coordinator after the worker committed, comes back as an
// error of the statement although the rows are stored. So only what the
// call's own transaction raises (invoiced's IV codes, the lease guard,
// constraints, bad data, access and syntax errors such as an unknown
// function, lock timeouts, deadlocks and serialisation failures), a worker
// the coordinator could not reach, and a call never sent, mean nothing was
// committed; any other failure is a lost answer, not a no (docs/api.md).
func ClassifyDelegated(err error) Class {
	if err == nil {
		return None
	}
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		if pgconn.SafeToRetry(err) { // not sent
			return Classify(err)
		}
		return OutcomeUnknown
	}
	code := pg.Code
	switch {
	case strings.HasPrefix(code, "IV"),
		pgerrcode.IsIntegrityConstraintViolation(code),
		pgerrcode.IsDataException(code),
		pgerrcode.IsSyntaxErrororAccessRuleViolation(code),
		pgerrcode.IsTransactionRollback(code),
		code == pgerrcode.LockNotAvailable,
		code == pgerrcode.SQLClientUnableToEstablishSQLConnection:
		return classifyPg(pg)
	}
	return OutcomeUnknown
}

// translated returns the class of the sentinel err derives from, None
// when it derives from none of them.
func translated(err error) Class {
	switch {
	case errors.Is(err, ErrOutcomeUnknown):
		return OutcomeUnknown
	case errors.Is(err, ErrLockTimeout):
		return LockTimeout
	case errors.Is(err, ErrRowMoved):
		return RowMoved
	}
	return None
}

// classifyPg classifies an error the server answered.
func classifyPg(pg *pgconn.PgError) Class {
	code := pg.Code
	switch {
	case code == pgerrcode.LockNotAvailable:
		return LockTimeout
	case code == CodeRowMoved:
		return RowMoved
	case pgerrcode.IsConnectionException(code),
		code == pgerrcode.AdminShutdown, code == pgerrcode.CrashShutdown, code == pgerrcode.CannotConnectNow,
		code == pgerrcode.QueryCanceled, code == pgerrcode.TooManyConnections:
		return Unavailable
	case pgerrcode.IsIntegrityConstraintViolation(code):
		return Constraint
	case pgerrcode.IsInvalidAuthorizationSpecification(code), pgerrcode.IsInvalidCatalogName(code):
		return None // a configuration fault, not an outage
	case fatal(pg):
		return Unavailable
	}
	return None
}

// sessionLost reports whether err ended the database session rather than
// one statement: no answer from the server, or an error of severity FATAL
// or PANIC (a terminated backend, a server shutting down).
func sessionLost(err error) bool {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return true
	}
	return fatal(pg)
}

// fatal reports whether pg ended the session. The severity is read
// unlocalized: a server with lc_messages in another language translates
// Severity ("ВАЖНО" for FATAL), not SeverityUnlocalized, which servers
// before 9.6 do not send.
func fatal(pg *pgconn.PgError) bool {
	sev := pg.SeverityUnlocalized
	if sev == "" {
		sev = pg.Severity
	}
	return sev == "FATAL" || sev == "PANIC"
}

// connectionLost reports whether err, which the server did not answer,
// means no connection or no answer in time.
func connectionLost(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	// A pooled connection the server dropped fails with "conn closed"
	// (pgconn.ErrConnClosed) before anything was sent: safe to retry.
	return errors.As(err, &ce) || errors.As(err, &ne) ||
		pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, puddle.ErrClosedPool) ||
		errors.Is(err, pgconn.ErrConnClosed) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// Violation is the integrity constraint a statement violated.
type Violation struct {
	Code       string // SQLSTATE: pgerrcode.UniqueViolation, ForeignKeyViolation, …
	Table      string
	Constraint string
}

// Violated returns the constraint err violated, and false when err is not
// of class Constraint.
func Violated(err error) (Violation, bool) {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || !pgerrcode.IsIntegrityConstraintViolation(pg.Code) {
		return Violation{}, false
	}
	table, constraint := pg.TableName, pg.ConstraintName
	if table == "" && constraint == "" {
		// A Citus coordinator passes a worker's error on without its
		// fields: the names are read from the message, which names the
		// shard: the table and the constraint with the shard id appended
		// ("idempotency_keys_pkey_102044"). The suffix is removed, so that
		// callers see the schema's names on either database (no
		// constraint of the schema ends in _ and digits).
		table, constraint = shardless(quoted(pg.Message, `on table "`)), shardless(quoted(pg.Message, `constraint "`))
	}
	return Violation{Code: pg.Code, Table: table, Constraint: constraint}, true
}

// IsUnique reports whether err is a unique violation (of any table's
// unique constraint or index).
func IsUnique(err error) bool {
	v, ok := Violated(err)
	return ok && v.Code == pgerrcode.UniqueViolation
}

// quoted returns the text between after (which ends in a quote) and the
// next double quote in msg, or "".
func quoted(msg, after string) string {
	_, rest, ok := strings.Cut(msg, after)
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, `"`)
	if !ok {
		return ""
	}
	return name
}

// shardless returns name without a Citus shard id (an underscore and
// digits at its end).
func shardless(name string) string {
	if i := strings.LastIndexByte(name, '_'); i > 0 && allDigits(name[i+1:]) {
		return name[:i]
	}
	return name
}

// allDigits reports whether s is made of ASCII digits only.
func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// SQLState returns the SQLSTATE of the first server error in err's chain,
// "" when there is none.
func SQLState(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code
	}
	return ""
}
