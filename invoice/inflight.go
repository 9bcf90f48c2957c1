package invoice

import "time"

// The batching policy: how many group-commit transactions a server keeps
// open at once (Config.InFlight), from what it measured of its database.
const (
	// MaxInFlight bounds Config.InFlight as InFlightFor and serve's
	// --batches-in-flight give it.
	MaxInFlight = 64
	// farRoundTrip is the database round trip above which two transactions
	// in flight overlap their round trips (docs/bench.md): near, one at a
	// time gives the largest batches.
	farRoundTrip = time.Millisecond
	// citusPerWorker is how many transactions are kept open per Citus
	// worker: a shared batch holds one shard group, so batches of different
	// groups run on their own workers at once, and one in flight for the
	// whole coordinator would serialise every worker's sellers behind one
	// transaction. On the 2-core test machine 2 and 4 in flight (one and
	// two per worker) tied as the best of 1, 2, 4, 8 and 16
	// (docs/scale-out.md); two per worker leaves room for workers with
	// cores of their own.
	citusPerWorker = 2
)

// InFlightFor returns the transactions a Committer should keep in flight
// (Config.InFlight) on a database whose round trip is rtt, with workers
// Citus workers (0: plain PostgreSQL), from a pool of maxConns
// connections: on Citus two per worker; on PostgreSQL 2 when the round
// trip exceeds 1 ms, else 1. Either is capped at half of maxConns (requests
// outside batches keep connections) and MaxInFlight, and is at least 1.
func InFlightFor(rtt time.Duration, workers, maxConns int) int {
	n := 1
	switch {
	case workers > 0:
		n = citusPerWorker * workers
	case rtt > farRoundTrip:
		n = 2
	}
	return max(1, min(n, maxConns/2, MaxInFlight))
}
