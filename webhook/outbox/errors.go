package outbox

import "github.com/invoiced/invoiced/internal/apperr"

// Errors of this package; match them with errors.Is.
var (
	// ErrTooManyWebhooks: CreateWebhook found MaxWebhooksPerSeller live
	// webhooks of the seller.
	ErrTooManyWebhooks = apperr.New(apperr.Conflict, "too_many_webhooks", "the seller has the most webhooks allowed")
	// ErrWebhookNotFound: DeleteWebhook found no live webhook of the
	// seller with that id.
	ErrWebhookNotFound = apperr.New(apperr.NotFound, "webhook_not_found", "webhook not found")
	// ErrEventNotFound: LookupEvent found no kept event of the seller of
	// that type on that invoice.
	ErrEventNotFound = apperr.New(apperr.NotFound, "event_not_found", "no such event is kept")
)
