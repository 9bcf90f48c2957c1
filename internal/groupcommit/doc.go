// Package groupcommit schedules group commit: requests queue per counter
// row and date (Key), and drainers take them in batches for one
// transaction each, which a Committer runs. The package knows keys, dates
// and batches, never what a request is or how a transaction is made, so its
// policy (which queues a batch takes, how many transactions run at once,
// when a row is batched alone) is tested without a database.
//
// The rules it keeps:
//   - A queue's requests are committed in arrival order, and the requests of
//     one Enqueue call are never cut apart within a queue.
//   - A batch takes at most one date per row, oldest date first, and at most
//     MaxBatch requests (more only to keep an Enqueue call whole).
//   - A row is reserved by one batch at a time, from its selection until its
//     transaction and any retries end: within one process, the
//     transactions of one counter row never overlap.
//   - At most InFlight shared drainers run at once; a row whose shared batch
//     could not get its lock quickly is served by a drainer of its own for
//     SoloFor, so it never holds the other rows up.
package groupcommit
