package document_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
)

// fromCrockford maps Crockford's lower-case base32 digits to strconv's
// base-32 digits, so that strconv reads a seller prefix independently of
// the code under test.
var fromCrockford = strings.NewReplacer(
	"j", "i", "k", "j", "m", "k", "n", "l", "p", "m", "q", "n", "r", "o", "s", "p",
	"t", "q", "v", "r", "w", "s", "x", "t", "y", "u", "z", "v")

func TestPublicIDCarriesSellerAndTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 4, 30, 0, 123456789, time.UTC)
	for _, seller := range []int64{1, 31, 32, 1000, 1 << 40, 1<<63 - 1} {
		id := document.NewPublicID(seller, at)
		route, ok := document.ParsePublicID(id)
		if !ok || route.Legacy() || route.SellerID != seller {
			t.Fatalf("%d: %q parses as %+v %v", seller, id, route, ok)
		}
		sellerPart, random, _ := strings.Cut(id[10:], "-")
		if got, err := strconv.ParseInt(fromCrockford.Replace(sellerPart), 32, 64); err != nil || got != seller {
			t.Fatalf("%q: seller part reads %d %v, want %d", id, got, err, seller)
		}
		if len(random) != 16 || strings.ContainsAny(id, "ilouABCXYZ") {
			t.Fatalf("%q: %d random characters, or letters outside lower-case Crockford", id, len(random))
		}
		if got, ok := document.PublicIDTime(id); !ok || !got.Equal(at.Truncate(time.Millisecond)) {
			t.Fatalf("%q carries %v, want %v", id, got, at.Truncate(time.Millisecond))
		}
	}
	if _, ok := document.PublicIDTime("abcdefghijklmnopqrstuvwxyz"); ok {
		t.Fatal("a legacy id carries a time")
	}
}

// Ids sort by issue time, in byte order (and so in the index), whatever
// their sellers and random bits; within one millisecond they differ.
func TestPublicIDsSortByTime(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	sellers := []int64{1000, 1, 1 << 40, 42, 1<<63 - 1}
	prev := ""
	for i := range 5000 {
		at := base.Add(time.Duration(i*i) * time.Millisecond)
		id := document.NewPublicID(sellers[i%len(sellers)], at)
		if id <= prev {
			t.Fatalf("id %d %q sorts before %q issued earlier", i, id, prev)
		}
		prev = id
	}
	seen := map[string]bool{}
	for range 10000 {
		id := document.NewPublicID(42, base)
		if seen[id] {
			t.Fatalf("%q issued twice in one millisecond", id)
		}
		seen[id] = true
	}
}

// Every one of the 80 random bits varies: over 2,000 ids of one seller and
// millisecond, each of the 16 random characters takes both values of each
// of its bits (a constant bit would fail with probability 2^-1999).
func TestPublicIDRandomBitsAllVary(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	const digits = "0123456789abcdefghjkmnpqrstvwxyz"
	var ones, zeros [16]int // bit masks seen set and clear, per character
	for range 2000 {
		id := document.NewPublicID(7, at)
		random := id[len(id)-16:]
		for i := range 16 {
			v := strings.IndexByte(digits, random[i])
			ones[i] |= v
			zeros[i] |= ^v & 31
		}
	}
	for i := range 16 {
		if ones[i] != 31 || zeros[i] != 31 {
			t.Fatalf("random character %d: bits set %05b, clear %05b; want every bit both ways", i, ones[i], zeros[i])
		}
	}
}

func TestParsePublicIDRefusesMalformed(t *testing.T) {
	t.Parallel()
	good := document.NewPublicID(1000, time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	tm, rest := good[:10], good[10:]
	sellerPart, random, _ := strings.Cut(rest, "-")
	for _, id := range []string{
		"", "-", "nope", "aaaaaaaaaaaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaaaaaaaa1", "AAAAAAAAAAAAAAAAAAAAAAAAAA",
		"aaaaaaaaaaaaaaaaaaaaaaaaa8", "aaaaaaaaaaaaaaaaaaaaaaaa/.",
		strings.ToUpper(good), tm + "-" + random, tm + "0" + rest, tm + sellerPart + random, tm + rest[:len(rest)-1], good + "0",
		tm + sellerPart + "_" + random, "8" + good[1:], good[:len(good)-1] + "u", tm[:9] + "i" + rest, tm + sellerPart + "i-" + random,
		tm + "0-" + random, tm + "8000000000000-" + random, tm + "zzzzzzzzzzzzz-" + random, tm + "10000000000000-" + random, good + "-" + random,
		"-" + good,
	} {
		if r, ok := document.ParsePublicID(id); ok {
			t.Errorf("%q parses as %+v", id, r)
		}
	}
	if r, ok := document.ParsePublicID(tm + "7zzzzzzzzzzzz-" + random); !ok || r.SellerID != 1<<63-1 {
		t.Errorf("the largest seller id: %+v %v", r, ok)
	}
	if r, ok := document.ParsePublicID("abcdefghijklmnopqrstuvwxyz"); !ok || !r.Legacy() {
		t.Errorf("legacy id: %+v %v", r, ok)
	}
}

// FuzzParsePublicID: whatever the input, an accepted id is exactly one of
// the two forms, and a routed one names the seller its prefix spells.
func FuzzParsePublicID(f *testing.F) {
	for _, s := range []string{"abcdefghijklmnopqrstuvwxyz", "01jdz8q3m71a-t0ka4x9c2b6v5nrh", "7zzzzzzzzz7zzzzzzzzzzzz-zzzzzzzzzzzzzzzz", "", "-", "0-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		r, ok := document.ParsePublicID(id)
		if !ok {
			return
		}
		if r.Legacy() {
			if len(id) != 26 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz234567") != "" {
				t.Fatalf("%q accepted as legacy", id)
			}
			return
		}
		if len(id) < 28 || id[0] > '7' {
			t.Fatalf("%q accepted as routed", id)
		}
		sellerPart, random, _ := strings.Cut(id[10:], "-")
		seller, err := strconv.ParseInt(fromCrockford.Replace(sellerPart), 32, 64)
		if err != nil || seller != r.SellerID || seller <= 0 || sellerPart[0] == '0' || len(random) != 16 ||
			strings.Trim(id, "-0123456789abcdefghjkmnpqrstvwxyz") != "" || strings.Count(id, "-") != 1 {
			t.Fatalf("%q accepted as routed for seller %d (prefix reads %d %v)", id, r.SellerID, seller, err)
		}
		if _, ok := document.PublicIDTime(id); !ok {
			t.Fatalf("%q: no time", id)
		}
	})
}
