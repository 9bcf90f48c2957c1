package gst

import (
	"errors"
	"testing"
	"time"
)

// civil returns the civil date y-m-d (00:00 UTC).
func civil(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func TestFYAt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		at   string
		want FY
	}{
		{"2026-03-31T18:29:59Z", 2025},
		{"2026-03-31T18:29:59.999999999Z", 2025},
		{"2026-03-31T18:30:00Z", 2026},
		{"2026-04-01T00:00:00+05:30", 2026},
		{"2026-03-31T23:59:59+05:30", 2025},
		{"2026-04-01T01:00:00+09:00", 2025}, // 31 March 21:30 IST
		{"2027-03-31T18:29:59Z", 2026},
		{"2017-07-01T00:00:00+05:30", 2017},
	}
	for _, tt := range tests {
		at, err := time.Parse(time.RFC3339Nano, tt.at)
		if err != nil {
			t.Fatal(err)
		}
		if got := FYAt(at); got != tt.want {
			t.Fatalf("FYAt(%s) = %d, want %d", tt.at, got, tt.want)
		}
	}
}

func TestFYOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		date time.Time
		want FY
	}{
		{civil(2026, time.March, 31), 2025},
		{civil(2026, time.April, 1), 2026},
		{civil(2026, time.January, 1), 2025},
		{civil(2026, time.December, 31), 2026},
		{civil(2020, time.January, 3), 2019}, // the portal's example: 03.01.2020 is 2019-20
		// The fields are read in the date's own location, not converted.
		{time.Date(2026, time.April, 1, 0, 0, 0, 0, IST), 2026},
		{time.Date(2026, time.March, 31, 23, 0, 0, 0, time.FixedZone("X", -12*3600)), 2025},
	}
	for _, tt := range tests {
		if got := FYOf(tt.date); got != tt.want {
			t.Fatalf("FYOf(%s) = %d, want %d", tt.date, got, tt.want)
		}
	}
}

func TestDateIST(t *testing.T) {
	t.Parallel()
	tests := []struct {
		at   string
		want time.Time
	}{
		{"2026-03-31T18:29:59Z", civil(2026, time.March, 31)},
		{"2026-03-31T18:30:00Z", civil(2026, time.April, 1)},
		{"2026-04-01T00:00:00+05:30", civil(2026, time.April, 1)},
		{"2025-12-31T18:30:00Z", civil(2026, time.January, 1)},
		{"2024-02-28T18:30:00Z", civil(2024, time.February, 29)},
		{"2026-06-15T23:59:59-07:00", civil(2026, time.June, 16)},
	}
	for _, tt := range tests {
		at, err := time.Parse(time.RFC3339Nano, tt.at)
		if err != nil {
			t.Fatal(err)
		}
		got := DateIST(at)
		if !got.Equal(tt.want) || got.Location() != time.UTC {
			t.Fatalf("DateIST(%s) = %s, want %s", tt.at, got, tt.want)
		}
	}
}

func TestParseDate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Time // zero when refused
	}{
		{"2026-04-01", civil(2026, time.April, 1)},
		{"2024-02-29", civil(2024, time.February, 29)},
		{"2026-12-31", civil(2026, time.December, 31)},
		{"2026-02-29", time.Time{}},
		{"2026-04-31", time.Time{}},
		{"2026-13-01", time.Time{}},
		{"2026-00-10", time.Time{}},
		{"2026-04-00", time.Time{}},
		{"2026-4-1", time.Time{}},
		{"2026-04-01T00:00:00Z", time.Time{}},
		{"2026-04-01 ", time.Time{}},
		{" 2026-04-01", time.Time{}},
		{"+026-04-01", time.Time{}},
		{"-026-04-01", time.Time{}},
		{"01-04-2026", time.Time{}},
		{"2026/04/01", time.Time{}},
		{"２026-04-01", time.Time{}},
		{"", time.Time{}},
	}
	for _, tt := range tests {
		got, err := ParseDate(tt.in)
		if tt.want.IsZero() {
			if !errors.Is(err, ErrInvalidDate) {
				t.Fatalf("ParseDate(%q) = %s, %v; want ErrInvalidDate", tt.in, got, err)
			}
			continue
		}
		if err != nil || !got.Equal(tt.want) || got.Location() != time.UTC {
			t.Fatalf("ParseDate(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestFYStrings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fy          FY
		long, short string
		start, end  time.Time
	}{
		{2026, "2026-27", "26-27", civil(2026, time.April, 1), civil(2027, time.March, 31)},
		{2017, "2017-18", "17-18", civil(2017, time.April, 1), civil(2018, time.March, 31)},
		{2099, "2099-00", "99-00", civil(2099, time.April, 1), civil(2100, time.March, 31)},
		{2023, "2023-24", "23-24", civil(2023, time.April, 1), civil(2024, time.March, 31)},
	}
	for _, tt := range tests {
		if got := tt.fy.String(); got != tt.long {
			t.Fatalf("FY(%d).String() = %q, want %q", tt.fy, got, tt.long)
		}
		if got := tt.fy.Short(); got != tt.short {
			t.Fatalf("FY(%d).Short() = %q, want %q", tt.fy, got, tt.short)
		}
		if got := tt.fy.Start(); !got.Equal(tt.start) || got.Location() != time.UTC {
			t.Fatalf("FY(%d).Start() = %s, want %s", tt.fy, got, tt.start)
		}
		if got := tt.fy.End(); !got.Equal(tt.end) || got.Location() != time.UTC {
			t.Fatalf("FY(%d).End() = %s, want %s", tt.fy, got, tt.end)
		}
	}
}

func TestFYRoundTrip(t *testing.T) {
	t.Parallel()
	for f := MinFY; f <= MaxFY; f++ {
		if !f.Valid() {
			t.Fatalf("FY(%d).Valid() = false", f)
		}
		got, err := ParseFY(f.String())
		if err != nil || got != f {
			t.Fatalf("ParseFY(%q) = %d, %v; want %d", f.String(), got, err, f)
		}
		if s := f.Short(); len(s) != 5 || s[0] < '1' || s[0] > '9' {
			t.Fatalf("FY(%d).Short() = %q: want 5 characters starting 1-9", f, s)
		}
		if FYOf(f.Start()) != f || FYOf(f.End()) != f || FYOf(f.Start().AddDate(0, 0, -1)) != f-1 || FYOf(f.End().AddDate(0, 0, 1)) != f+1 {
			t.Fatalf("FY(%d): Start %s and End %s are not its first and last days", f, f.Start(), f.End())
		}
		if FYAt(f.Start().Add(-330*time.Minute)) != f || FYAt(f.Start().Add(-330*time.Minute-1)) != f-1 {
			t.Fatalf("FY(%d) does not begin at 00:00 IST on %s", f, f.Start())
		}
	}
	for _, f := range []FY{MinFY - 1, MaxFY + 1, 0, -1} {
		if f.Valid() {
			t.Fatalf("FY(%d).Valid() = true", f)
		}
	}
}

func TestParseFYRefuses(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"", "2026", "2026-28", "2026-2027", "26-27", "2026/27", "2026-7", " 2026-27", "2026-27 ",
		"2016-17", "2100-01", "1999-00", "+026-27", "2026-+7", "２026-27", "2026–27",
	} {
		if f, err := ParseFY(s); !errors.Is(err, ErrInvalidDate) {
			t.Fatalf("ParseFY(%q) = %d, %v; want ErrInvalidDate", s, f, err)
		}
	}
}
