// Package lease hands a series to an offline device (docs/offline.md): the
// device numbers it alone while the lease holds, uploads what it
// numbered, and ends the lease; a lost device's lease is ended by force
// and settled by the seller's declaration.
//
// What it holds:
//   - The lease ([Lease], the [LeaseYears] it reserves, [Position]) and
//     its life: [TakeLease], [TakeLeaseKeyed], [ResumeLease],
//     [EndLeaseByDevice], [ForceEndLease], [SettleLease],
//     [SettleLeaseYears], and [EndLease] for an [EndRequest] as a client
//     sends it (which end it asks for: [EndRequest.Kind]).
//   - The check [CheckLease] of a Lease-Id before an upload's body is
//     read, and the reads [GetLease], [HolderLease], [Leases],
//     [SellerLeases] and [NextPosition].
//   - The uploads: [UploadOffline] and [UploadOfflineCancels] store what
//     the device numbered only when the server's own
//     document.NumberOffline and document.CancelOffline compute the same,
//     writing the invoice rows, records and events through package
//     invoice's writer ([invoice.QueueIssued], [invoice.QueueCancelled]).
//
// Dependencies point inward: lease imports invoice and series; neither
// imports lease. The counter rows stay package series' (the lease guard,
// a trigger on them, refuses every other writer with series.ErrLeased), and
// a settlement's declarations are series.Declaration records.
//
// SQL lives in the *_store.go files; its errors are translated at the
// store's edge into this package's sentinels (lease.go, upload.go).
package lease
