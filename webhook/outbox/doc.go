// Package outbox is the server side of webhooks: the registered webhooks,
// the event log, and the queue of deliveries with the worker that sends
// them.
//
// The invoice transactions record each event and one delivery row per
// subscribed webhook in the same statement as their change (see
// invoice/events_store.go), so an event exists if and only if its change
// committed. This package reads and registers webhooks
// (webhook_store.go), lists events (event_store.go), claims due
// deliveries for a lease with FOR UPDATE SKIP LOCKED, records their
// outcome and purges old events (delivery_store.go); the Deliverer
// (deliverer.go) sends them, signed by package webhook, to addresses
// PublicAddr allows (address.go). How an event's body looks is the HTTP
// API's concern: the Deliverer is given it as DelivererConfig.Body.
//
// Package webhook, the signing a receiver needs, stays a leaf without a
// database; this package is for the server alone.
package outbox
