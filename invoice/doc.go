// Package invoice stores GST invoices and numbers them in the database:
// it issues, reads and cancels them, keeps their idempotency keys, period
// locks and openings, and gathers
// concurrent requests into shared transactions (the Committer). The
// document itself (the request, its validation and amounts, the chain
// record and its hash, public ids) is package document's, computed before
// any transaction; the numbers are package series' counter rows, taken
// under their lock in the same transaction.
//
// Every issue and every cancellation is a record in the series-year's
// tamper-evident hash chain (docs/chain.md), appended under the same
// counter lock and in the same transaction as the invoice itself.
//
// What it holds:
//   - Issuing: [Issue], [IssueTx] and [IssueManyTx] number validated
//     drafts (document.Draft, made by document.Prepare) in one counter
//     update per series-year, so a caller that gathers concurrent requests
//     pays one lock hold and one COMMIT for all of them.
//   - The Committer ([NewCommitter], [NewPlainCommitter]): queues requests
//     per counter row in internal/groupcommit, commits batches by one
//     strategy its constructor chooses (strategyFor: on a pool pipelined
//     and predicted in one round trip, predict.go, on Citus one delegated
//     call, delegated_store.go; on one connection plain transactions),
//     and retries a failed batch by the rules in committer_retry.go.
//   - Reading: [Get], [GetByPublicID], [List], [ListDated], [FindByNumber],
//     [IDBySerial]; notes' originals: [CheckOriginal].
//   - Cancelling: [Cancel], [CancelOnce], [CancelTx].
//   - Idempotency keys: [ClaimKey], [ClaimKeys], [PurgeKeys].
//   - Period locks after filing (docs/periods.md): [LockPeriod],
//     [UnlockPeriod], [PeriodLocks], [PeriodEvents], [CheckPeriod], and the
//     guard every backdated write takes.
//   - Openings of a series moved here mid-year (docs/openings.md):
//     [DeclareOpeningTx], [OpeningOf], [OpeningRecord].
//   - For writers of invoices numbered elsewhere (package lease, whose
//     uploads store what an offline device numbered): [QueueIssued],
//     [QueueCancelled], [QueueSubscribers] and [Events], [LockBySerialTx]
//     and [CheckPeriodTx], so that the invoice row and its events stay
//     defined here once.
//
// For Go programs this is the library surface beside package series: the
// types a caller passes and receives (document.Draft, document.Invoice,
// gst.Seller, gst.Series) come from packages document and gst; there are
// no aliases of them here. SQL lives in the *_store.go files; database
// errors are translated where they arise.
package invoice
