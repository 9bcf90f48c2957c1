package registration

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/sellers"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"strings"
)

// This file holds the SQL of the per-seller switch, and how a seller and an
// invoice's buyer become an e-invoice's parties.

// subscriberURL is what the IRP subscriber's url column holds: no URL the
// webhook deliverer can dial (webhooks.url is NOT NULL, 8 to 2048 bytes).
const subscriberURL = "irp:registration"

// SetEInvoicing turns e-invoicing on or off for the seller registered under
// gstin and returns the seller as stored. On, its B2B invoices and notes
// issued from the moment this commits are queued for the IRP in their own
// transactions (the seller's subscriber of kind irp, created here when none
// is live); off, those issued after are not, and those queued before are
// still registered (they were issued under e-invoicing). Turning it on
// again or off again changes nothing.
//
// It fails with ErrAddressIncomplete when turning it on for a seller whose
// postal address lacks a part (sellers update --address-line1 …), with
// sellers.ErrNotFound and gst.ErrInvalidGSTIN, and with the database's
// error wrapped.
func SetEInvoicing(ctx context.Context, b *pgxpool.Pool, gstin string, on bool) (gst.Seller, error) {
	s, err := sellers.ByGSTIN(ctx, b, gstin)
	if err != nil {
		return gst.Seller{}, err
	}
	if on && !s.Postal.Complete() {
		return gst.Seller{}, apperr.Errorf(ErrAddressIncomplete, "seller %s has no complete postal address (a first line, a city and a PIN), which every e-invoice's SellerDtls needs: set it with invoiced sellers update --gstin %s --address-line1 … --city … --pin …", s.GSTIN, s.GSTIN)
	}
	err = db.InTx(ctx, b, func(tx pgx.Tx) error {
		// The lock of the seller's webhooks (outbox.CreateWebhook says why
		// an advisory one): two switches at once make one subscriber.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('webhooks:' || $1::bigint, 0))`, s.ID); err != nil {
			return err
		}
		// The address is checked again by the statement, under the row's
		// lock: sellers.Update refuses to make it incomplete while
		// e_invoicing is set.
		tag, err := tx.Exec(ctx, `
			UPDATE sellers SET e_invoicing = $2
			WHERE id = $1 AND (NOT $2 OR (address_line1 <> '' AND address_city <> '' AND address_pin <> ''))`, s.ID, on)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return apperr.Errorf(ErrAddressIncomplete, "seller %s's postal address was cleared meanwhile: set it again", s.GSTIN)
		}
		if !on {
			_, err := tx.Exec(ctx, `UPDATE webhooks SET deleted_at = now() WHERE seller_id = $1 AND kind = 'irp' AND deleted_at IS NULL`, s.ID)
			return err
		}
		var live bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM webhooks WHERE seller_id = $1 AND kind = 'irp' AND deleted_at IS NULL)`, s.ID).Scan(&live); err != nil || live {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO webhooks (public_id, seller_id, url, events, secret, kind) VALUES ($1, $2, $3, $4, '', 'irp')`,
			subscriberID(), s.ID, subscriberURL, []string{"invoice.issued", "invoice.cancelled"})
		return err
	})
	if err != nil {
		if errors.Is(err, ErrAddressIncomplete) {
			return gst.Seller{}, err
		}
		return gst.Seller{}, fmt.Errorf("registration: set e-invoicing: %w", db.TranslateTx(err, "registration"))
	}
	return sellers.ByID(ctx, b, s.ID)
}

// EInvoicingSellers returns the GSTINs of the sellers that e-invoice, in
// GSTIN order. It fails with the database's error.
func EInvoicingSellers(ctx context.Context, q db.Querier) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT gstin FROM sellers WHERE e_invoicing ORDER BY gstin`)
	if err != nil {
		return nil, fmt.Errorf("registration: list e-invoicing sellers: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("registration: list e-invoicing sellers: %w", err)
	}
	return out, nil
}

// subscriberID returns the public id of an IRP subscriber: "irp_" and 80
// random bits (webhooks.public_id is unique).
func subscriberID() string {
	var b [10]byte
	rand.Read(b[:])
	return "irp_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// PartyOf returns s as an e-invoice's supplier: its GSTIN, name, postal
// address in its GSTIN's state, and its phone (its digits, when 6 to 12)
// and e-mail.
func PartyOf(s gst.Seller) einvoice.Party {
	phone := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s.Phone)
	if len(phone) > 12 && strings.HasPrefix(phone, "91") {
		phone = phone[2:]
	}
	if len(phone) < 6 || len(phone) > 12 {
		phone = ""
	}
	return einvoice.Party{GSTIN: string(s.GSTIN), LegalName: s.Name, Phone: phone, Email: s.Email,
		Address: einvoice.Address{Line1: s.Postal.Line1, Line2: s.Postal.Line2, Locality: s.Postal.City, PIN: s.Postal.PIN, StateCode: s.StateCode}}
}

// InputFor returns what einvoice.Build needs besides inv, an invoice of
// seller: the seller as supplier, the buyer's address on inv (Rule 46(d))
// and the address of delivery, when inv has one, under its name (else the
// buyer's).
func InputFor(seller gst.Seller, inv document.Invoice) einvoice.Input {
	in := einvoice.Input{Seller: PartyOf(seller)}
	if inv.Buyer != nil && inv.Buyer.Address != nil {
		in.Buyer.Address = addressOf(*inv.Buyer.Address)
	}
	if st := inv.ShipTo; st != nil {
		name := st.Name
		if name == "" && inv.Buyer != nil {
			name = inv.Buyer.Name
		}
		in.ShipTo = &einvoice.ShipTo{LegalName: name, Address: addressOf(st.Address)}
	}
	return in
}

func addressOf(a document.Address) einvoice.Address {
	return einvoice.Address{Line1: a.Line1, Line2: a.Line2, Locality: a.City, PIN: a.PIN, StateCode: a.State}
}
