package fairshare

import (
	"errors"
	"testing"
)

func TestSlotsHoldEachSellerToItsShare(t *testing.T) {
	t.Parallel()
	s := New(2)
	for i, want := range []bool{true, true, false} {
		if got := s.Take(1); got != want {
			t.Fatalf("seller 1, take %d: %v, want two slots, then none", i+1, got)
		}
	}
	if !s.Take(2) {
		t.Fatal("seller 2 is held by seller 1's slots")
	}
	s.Release(1)
	if !s.Take(1) {
		t.Fatal("a released slot is not free again")
	}
	s.Release(1)
	s.Release(1)
	s.Release(2)
	if len(s.n) != 0 {
		t.Fatalf("bookkeeping left %v", s.n)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("releasing a slot never taken did not panic")
		}
	}()
	s.Release(3)
}

func TestRoundServesEverySellerOnceAndSkipsFullOnes(t *testing.T) {
	t.Parallel()
	s := New(1)
	s.Take(2) // seller 2 has its one slot in flight elsewhere
	var served []int64
	n, err := s.Round([]int64{1, 2, 3, 4}, func() bool { return false }, func(seller int64) (bool, error) {
		served = append(served, seller)
		return seller != 3, nil // seller 3 had nothing due after all
	})
	if err != nil || n != 2 || len(served) != 3 || served[0] != 1 || served[1] != 3 || served[2] != 4 {
		t.Fatalf("served %v, counted %d, err %v; want 1, 3, 4 served and 2 done", served, n, err)
	}
	boom := errors.New("boom")
	n, err = s.Round([]int64{1, 3, 4}, func() bool { return false }, func(seller int64) (bool, error) {
		if seller == 3 {
			return false, boom
		}
		return true, nil
	})
	if !errors.Is(err, boom) || n != 1 {
		t.Fatalf("a failing serve: %d, %v; want 1 done and its error", n, err)
	}
	if s.n[3] != 0 || s.n[1] != 0 {
		t.Fatalf("slots not released after a failure: %v", s.n)
	}
	calls := 0
	s.Round([]int64{1, 3}, func() bool { return true }, func(int64) (bool, error) { calls++; return true, nil })
	if calls != 0 {
		t.Fatal("a stopped round served")
	}
}
