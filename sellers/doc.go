// Package sellers keeps the sellers (GST registrations) in the database:
// [Create] and [CreateWith] register one, [Update] applies [Changes],
// [ByGSTIN], [ByID] and [All] read them, and [CheckContact] and
// [CheckPostal] judge the contact and postal address a receipt and an
// e-invoice print. A seller's series and counters are package series',
// which imports this one (a series belongs to a seller: creating one
// fails with [ErrNotFound] when its seller is not registered).
//
// SQL lives in the *_store.go files.
package sellers
