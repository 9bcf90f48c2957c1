package sellers

import (
	"context"
	"errors"
	"fmt"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/freetext"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of sellers.

// Create registers a seller; see CreateWith.
func Create(ctx context.Context, q db.Querier, gstin, name string) (gst.Seller, error) {
	return CreateWith(ctx, q, gstin, name, gst.Contact{})
}

// CreateWith registers a seller with its contact. It returns
// ErrInvalidGSTIN for a bad GSTIN, ErrInvalidSeries for an empty name or
// an invalid contact (CheckContact) and ErrExists when the GSTIN is
// already registered.
func CreateWith(ctx context.Context, q db.Querier, gstin, name string, c gst.Contact) (gst.Seller, error) {
	g, err := gst.ParseGSTIN(gstin)
	if err != nil {
		return gst.Seller{}, err
	}
	if err := checkName(name); err != nil {
		return gst.Seller{}, err
	}
	if p := freetext.Problem(name); p != "" {
		return gst.Seller{}, apperr.Errorf(gst.ErrInvalidSeries, "seller name holds %s; control, bidi and invisible characters are refused", p)
	}
	if err := CheckContact(c); err != nil {
		return gst.Seller{}, err
	}
	s := gst.Seller{GSTIN: g, Name: name, StateCode: g.StateCode(), Contact: c}
	err = q.QueryRow(ctx, `
		INSERT INTO sellers (gstin, name, state_code, address, phone, email)
		VALUES (@gstin, @name, @state_code, @address, @phone, @email)
		RETURNING id, created_at`, pgx.NamedArgs{
		"gstin": string(g), "name": name, "state_code": s.StateCode,
		"address": c.Address, "phone": c.Phone, "email": c.Email,
	}).Scan(&s.ID, &s.CreatedAt)
	if db.IsUnique(err) {
		return gst.Seller{}, apperr.Errorf(ErrExists, "seller %s already exists", g)
	}
	if err != nil {
		return gst.Seller{}, fmt.Errorf("create seller: %w", err)
	}
	return s, nil
}

// Changes is a change to a seller: nil fields stay as they are.
// Line1, Line2, City and PIN are the parts of its postal address
// (gst.Postal); when they change and Address is not given, the one-line
// address becomes the parts' (gst.Postal.OneLine), so that receipts and
// older binaries print the same address.
type Changes struct {
	Name, Address, Phone, Email *string
	Line1, Line2, City, PIN     *string
}

// Update applies u to the seller registered under gstin and returns
// it as stored. It returns ErrInvalidGSTIN, ErrInvalidSeries for an empty
// name, an invalid contact or postal address (CheckPostal), or a postal
// address made incomplete while the seller e-invoices, and
// ErrNotFound.
func Update(ctx context.Context, q db.Querier, gstin string, u Changes) (gst.Seller, error) {
	s, err := ByGSTIN(ctx, q, gstin)
	if err != nil {
		return gst.Seller{}, err
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&s.Name, u.Name)
	set(&s.Address, u.Address)
	set(&s.Phone, u.Phone)
	set(&s.Email, u.Email)
	postal := s.Postal
	set(&s.Postal.Line1, u.Line1)
	set(&s.Postal.Line2, u.Line2)
	set(&s.Postal.City, u.City)
	set(&s.Postal.PIN, u.PIN)
	if s.Postal != postal && u.Address == nil {
		s.Address = s.Postal.OneLine(s.StateCode)
	}
	if err := checkName(s.Name); err != nil {
		return gst.Seller{}, err
	}
	if err := CheckContact(s.Contact); err != nil {
		return gst.Seller{}, err
	}
	if err := CheckPostal(s.Postal); err != nil {
		return gst.Seller{}, err
	}
	// The e-invoicing switch is read by the statement: turning it on
	// (einvoice/registration) requires a complete address under the same
	// row lock.
	out, err := scanSeller(q.QueryRow(ctx, `
		UPDATE sellers SET name = @name, address = @address, phone = @phone, email = @email,
			address_line1 = @line1, address_line2 = @line2, address_city = @city, address_pin = @pin
		WHERE id = @id AND (NOT e_invoicing OR @complete)
		RETURNING `+sellerCols, pgx.NamedArgs{
		"id": s.ID, "name": s.Name, "address": s.Address, "phone": s.Phone, "email": s.Email,
		"line1": s.Postal.Line1, "line2": s.Postal.Line2, "city": s.Postal.City, "pin": s.Postal.PIN,
		"complete": s.Postal.Complete(),
	}))
	if errors.Is(err, ErrNotFound) {
		return gst.Seller{}, apperr.Errorf(gst.ErrInvalidSeries, "seller %s e-invoices: its address needs a first line, a city and a PIN (turn e-invoicing off first to clear them)", s.GSTIN)
	}
	return out, err
}

// ByGSTIN returns the seller registered under gstin, or
// ErrNotFound (ErrInvalidGSTIN when gstin is malformed).
func ByGSTIN(ctx context.Context, q db.Querier, gstin string) (gst.Seller, error) {
	g, err := gst.ParseGSTIN(gstin)
	if err != nil {
		return gst.Seller{}, err
	}
	return scanSeller(q.QueryRow(ctx, `SELECT `+sellerCols+` FROM sellers WHERE gstin = $1`, string(g)))
}

// ByID returns the seller with id, or ErrNotFound.
func ByID(ctx context.Context, q db.Querier, id int64) (gst.Seller, error) {
	return scanSeller(q.QueryRow(ctx, `SELECT `+sellerCols+` FROM sellers WHERE id = $1`, id))
}

// All returns every seller, oldest first.
func All(ctx context.Context, q db.Querier) ([]gst.Seller, error) {
	rows, err := q.Query(ctx, `SELECT `+sellerCols+` FROM sellers ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list sellers: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (gst.Seller, error) { return scanSeller(r) })
}

const sellerCols = `id, gstin, name, state_code, created_at, address, phone, email,
	address_line1, address_line2, address_city, address_pin, e_invoicing`

func scanSeller(row pgx.Row) (gst.Seller, error) {
	var s gst.Seller
	var g string
	err := row.Scan(&s.ID, &g, &s.Name, &s.StateCode, &s.CreatedAt, &s.Address, &s.Phone, &s.Email,
		&s.Postal.Line1, &s.Postal.Line2, &s.Postal.City, &s.Postal.PIN, &s.EInvoicing)
	if errors.Is(err, pgx.ErrNoRows) {
		return gst.Seller{}, ErrNotFound
	}
	if err != nil {
		return gst.Seller{}, fmt.Errorf("read seller: %w", err)
	}
	s.GSTIN = gst.GSTIN(g)
	return s, nil
}
