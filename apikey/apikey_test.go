package apikey

import (
	"context"
	"errors"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/sellers"
	"slices"
	"strings"
	"testing"
)

func TestScopes(t *testing.T) {
	t.Parallel()
	all := CanIssue | CanRead | CanManage
	if got := all.Names(); !slices.Equal(got, []string{ScopeIssue, ScopeRead, ScopeManage}) {
		t.Fatalf("Names of every scope = %v", got)
	}
	if got := Scopes(0).Names(); got != nil {
		t.Fatalf("Names of no scope = %v, want nil", got)
	}
	if !all.Has(CanRead|CanManage) || CanRead.Has(CanRead|CanIssue) {
		t.Fatal("Has is not set inclusion")
	}
	p := Principal{Scopes: CanRead}
	if !p.Has(ScopeRead) || p.Has(ScopeIssue) || p.Has("admin") || p.Has("") {
		t.Fatal("Principal.Has answers for a scope the key lacks or no scope at all")
	}
	for _, c := range []struct {
		in   []string
		want []string
	}{
		{[]string{"manage", " read ", "read", "issue"}, []string{"issue", "read", "manage"}},
		{[]string{"read"}, []string{"read"}},
	} {
		got, err := normalizeScopes(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("normalizeScopes(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range [][]string{nil, {}, {"admin"}, {"read", "Read"}} {
		if _, err := normalizeScopes(bad); !errors.Is(err, ErrInvalidScopes) {
			t.Errorf("normalizeScopes(%q): %v, want ErrInvalidScopes", bad, err)
		}
	}
}

func TestPrincipalSeries(t *testing.T) {
	t.Parallel()
	every := Principal{}
	if !every.MaySeries("ch9") || every.CheckSeries("CH9") != nil || every.CheckAllSeries() != nil {
		t.Fatal("a key for every series is restricted")
	}
	one := Principal{Series: []string{"CH1"}}
	if !one.MaySeries("ch1") || one.MaySeries("CH2") {
		t.Fatal("MaySeries ignores the restriction or the case")
	}
	err := one.CheckSeries("CH2")
	if !errors.Is(err, ErrSeriesForbidden) || !strings.Contains(err.Error(), "only use series CH1, not CH2") {
		t.Fatalf("CheckSeries outside the restriction: %v", err)
	}
	if err := one.CheckAllSeries(); !errors.Is(err, ErrSeriesForbidden) {
		t.Fatalf("CheckAllSeries of a restricted key: %v", err)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	good := "ik_0123abcd_" + strings.Repeat("a2", 16)
	prefix, secret, ok := Parse(good)
	if !ok || prefix != "0123abcd" || secret != strings.Repeat("a2", 16) || len(good) != Len {
		t.Fatalf("Parse(%q) = %q, %q, %v", good, prefix, secret, ok)
	}
	for _, bad := range []string{
		"", good[:len(good)-1], good + "a", "ix" + good[2:], strings.Replace(good, "_", "-", 2),
		"ik_0123ABCD_" + strings.Repeat("a2", 16), // upper-case prefix
		"ik_0123abcd_" + strings.Repeat("a1", 16), // 1 is not base32
		"ik_0123abcd_" + strings.Repeat("A2", 16), // upper-case secret
	} {
		if _, _, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// FuzzParse: whatever Parse accepts is put back together exactly.
func FuzzParse(f *testing.F) {
	f.Add("ik_0123abcd_" + strings.Repeat("a2", 16))
	f.Add("ik_")
	f.Fuzz(func(t *testing.T, key string) {
		prefix, secret, ok := Parse(key)
		if ok && (Tag+prefix+"_"+secret != key || !isPrefix(prefix) || len(secret) != secretLen) {
			t.Fatalf("Parse(%q) = %q, %q", key, prefix, secret)
		}
		if !ok && (prefix != "" || secret != "") {
			t.Fatalf("Parse(%q) refused but returned %q, %q", key, prefix, secret)
		}
	})
}

// TestKeyLifecycle: a created key authenticates to its seller and scopes
// (through Lookup), a wrong secret, an unknown prefix and a revoked key do
// not, and List shows it without its secret.
func TestKeyLifecycle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t)
	seller := testfactory.Seller(t, pool, nil)
	testfactory.Series(t, pool, seller, nil)
	lookup := func(ctx context.Context, prefix string) (Row, bool, error) { return Lookup(ctx, pool, prefix) }

	key, err := Create(ctx, pool, seller.ID, []string{"read", "issue", "read"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Authenticate(ctx, lookup, "bearer "+key)
	if err != nil {
		t.Fatalf("Authenticate a fresh key: %v", err)
	}
	prefix, _, _ := Parse(key)
	if p.Seller.ID != seller.ID || p.Seller.GSTIN != seller.GSTIN || p.Prefix != prefix || p.Scopes != CanIssue|CanRead || p.Series != nil {
		t.Fatalf("principal %+v", p)
	}
	wrong := key[:len(key)-1] + map[bool]string{true: "b", false: "a"}[key[len(key)-1] == 'a']
	unknown := Tag + "ffffffff" + key[len(Tag)+prefixLen:]
	if prefix == "ffffffff" {
		unknown = Tag + "eeeeeeee" + key[len(Tag)+prefixLen:]
	}
	for _, h := range []string{"", "Bearer", "Basic " + key, "Bearer " + wrong, "Bearer " + unknown} {
		if _, err := Authenticate(ctx, lookup, h); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("Authenticate(%q): %v, want ErrUnauthorized", h, err)
		}
	}

	term, err := CreateForSeries(ctx, pool, seller.ID, []string{"issue"}, []string{"ch1", "CH1"})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := Authenticate(ctx, lookup, "Bearer "+term); err != nil || !slices.Equal(p.Series, []string{"CH1"}) {
		t.Fatalf("series key: %+v, %v", p, err)
	}
	if _, err := CreateForSeries(ctx, pool, seller.ID, []string{"issue"}, []string{"CH9"}); !errors.Is(err, ErrInvalidKeySeries) {
		t.Fatalf("a series the seller lacks: %v", err)
	}
	if _, err := Create(ctx, pool, seller.ID+1000, []string{"read"}); !errors.Is(err, sellers.ErrNotFound) {
		t.Fatalf("an unknown seller: %v", err)
	}

	if err := Revoke(ctx, pool, "ik_"+prefix); err != nil {
		t.Fatal(err)
	}
	if _, err := Authenticate(ctx, lookup, "Bearer "+key); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("a revoked key: %v", err)
	}
	if err := Revoke(ctx, pool, key); !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("revoking twice: %v", err)
	}

	infos, err := List(ctx, pool, seller.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 || infos[0].Prefix != prefix || infos[0].RevokedAt == nil || !slices.Equal(infos[0].Scopes, []string{"issue", "read"}) ||
		infos[1].RevokedAt != nil || !slices.Equal(infos[1].Series, []string{"CH1"}) {
		t.Fatalf("List = %+v", infos)
	}
}
