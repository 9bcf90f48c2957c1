package document

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"time"
)

// A public id names an invoice in its receipt link, /r/{public_id}; it is
// the link's only capability (docs/public-ids.md). Two forms resolve:
//
//   - routed (issued now): a 48-bit millisecond timestamp of the issue (10
//     characters), the seller's id, "-", and 80 random bits (16
//     characters), all in lower-case Crockford base32, e.g.
//     "01jdz8q3m71a-t0ka4x9c2b6v5nrh" for seller 42. The time first makes
//     new ids land at the right-hand edge of their unique index, as the
//     identity key's do, instead of on a random leaf page; the seller
//     routes the lookup to one seller's rows (one shard on Citus).
//   - legacy (issued before): 26 characters of lower-case RFC 4648
//     base32, 128 random bits; they resolve forever.
//
// The two never collide: a routed id holds a "-" and is at least 28
// characters long.

// crockford is Crockford's base32 alphabet in lower case: digits before
// letters, so that byte order, and the collations PostgreSQL is run with,
// order encoded strings of one length as the numbers they encode.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

const (
	timeChars   = 10 // 48 bits of milliseconds, the top 2 of 50 zero
	randomChars = 16 // 80 random bits
	maxSeller   = 13 // characters of the largest int64
	legacyChars = 26
)

// NewPublicID returns a new routed public id for an invoice of sellerID
// issued at: at in milliseconds, the seller's id and 80 bits from
// crypto/rand. Ids sort by their issue time to the millisecond, whatever
// their sellers. sellerID must be positive (database identities are); it
// panics otherwise.
func NewPublicID(sellerID int64, at time.Time) string {
	var r [10]byte
	rand.Read(r[:]) // never fails (crypto/rand documents it)
	return routedID(sellerID, at, r)
}

// routedID returns the routed public id of sellerID, at and the random
// bits r.
func routedID(sellerID int64, at time.Time, r [10]byte) string {
	if sellerID <= 0 {
		panic("invoice: public id for a seller id that is not positive")
	}
	var b strings.Builder
	b.Grow(timeChars + maxSeller + 1 + randomChars)
	ms := uint64(at.UnixMilli()) & (1<<48 - 1)
	for shift := 5 * (timeChars - 1); shift >= 0; shift -= 5 {
		b.WriteByte(crockford[(ms>>shift)&31])
	}
	var seller [maxSeller]byte
	i := len(seller)
	for v := uint64(sellerID); v > 0; v >>= 5 {
		i--
		seller[i] = crockford[v&31]
	}
	b.Write(seller[i:])
	b.WriteByte('-')
	hi, lo := uint64(binary.BigEndian.Uint16(r[:2])), binary.BigEndian.Uint64(r[2:])
	// 80 bits as hi:lo (16 + 64), five at a time from the top.
	for shift := 75; shift >= 0; shift -= 5 {
		var v uint64
		switch {
		case shift >= 64:
			v = hi >> (shift - 64)
		case shift > 59:
			v = hi<<(64-shift) | lo>>shift
		default:
			v = lo >> shift
		}
		b.WriteByte(crockford[v&31])
	}
	return b.String()
}

// PublicIDRoute says where the invoice of a public id lives.
type PublicIDRoute struct {
	// SellerID is the seller a routed id names; 0 for a legacy id.
	SellerID int64
}

// Legacy reports whether the id is of the 128-bit random form issued
// before routed ids, which names no seller.
func (r PublicIDRoute) Legacy() bool { return r.SellerID == 0 }

// ParsePublicID returns the route of id and true when id is a well-formed
// public id of either form (legacy or routed, in their canonical
// lower-case spelling); false otherwise, for any string, without touching
// the database. A well-formed id need not exist.
func ParsePublicID(id string) (PublicIDRoute, bool) {
	if len(id) == legacyChars {
		for i := 0; i < len(id); i++ {
			if c := id[i]; !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
				return PublicIDRoute{}, false
			}
		}
		return PublicIDRoute{}, true
	}
	if len(id) < timeChars+1+1+randomChars {
		return PublicIDRoute{}, false
	}
	// The first time character holds the top 3 bits of 48 after 2 zero bits.
	if strings.IndexByte(crockford[:8], id[0]) < 0 {
		return PublicIDRoute{}, false
	}
	for i := 1; i < timeChars; i++ {
		if strings.IndexByte(crockford, id[i]) < 0 {
			return PublicIDRoute{}, false
		}
	}
	seller, random, ok := strings.Cut(id[timeChars:], "-")
	if !ok || len(random) != randomChars || len(seller) == 0 || len(seller) > maxSeller || seller[0] == '0' {
		return PublicIDRoute{}, false
	}
	var v uint64
	for i := 0; i < len(seller); i++ {
		d := strings.IndexByte(crockford, seller[i])
		if d < 0 || v > (1<<63-1)>>5 {
			return PublicIDRoute{}, false
		}
		v = v<<5 | uint64(d)
	}
	for i := 0; i < len(random); i++ {
		if strings.IndexByte(crockford, random[i]) < 0 {
			return PublicIDRoute{}, false
		}
	}
	return PublicIDRoute{SellerID: int64(v)}, true
}

// PublicIDTime returns the issue time, to the millisecond, that a routed
// id carries, and false for a legacy or malformed id.
func PublicIDTime(id string) (time.Time, bool) {
	r, ok := ParsePublicID(id)
	if !ok || r.Legacy() {
		return time.Time{}, false
	}
	var ms int64
	for i := 0; i < timeChars; i++ {
		ms = ms<<5 | int64(strings.IndexByte(crockford, id[i]))
	}
	return time.UnixMilli(ms).UTC(), true
}
