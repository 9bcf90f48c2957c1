package gst

import (
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/invoiced/invoiced/internal/apperr"
)

// Format is a parsed number format: the rule that turns a financial year and
// a serial into a document number such as CH1/26-27/00001. The zero Format
// renders nothing; obtain one with ParseFormat. Formats are comparable with
// ==, and two formats are equal exactly when their String forms are.
//
// The language: literal characters A-Z, 0-9, '/' and '-'; {FY}, the
// financial year as Short renders it ("26-27"); and exactly one {SEQ}, the
// serial in decimal, or {SEQ:N}, the serial zero-padded to N digits.
type Format struct {
	prefix, suffix string // normalised text before and after {SEQ}: literals and {FY}
	width          int    // N of {SEQ:N}; 0 for {SEQ}
	digits         int    // most digits the serial renders with; 0 only in the zero Format
}

const (
	maxNumberLen = 16       // Rule 46(b) and the IRP pattern
	maxSeqWidth  = 15       // largest N of {SEQ:N}
	fyToken      = "{FY}"   // normalised {FY}
	fyRenderLen  = 5        // len(FY.Short()) for every valid FY
	exampleFY    = FY(2026) // the year example numbers in messages are shown in
	numberChars  = "A-Z, 0-9, / and -"
)

// ParseFormat parses and normalises the number format s: ASCII lower-case
// letters become upper-case, and placeholder names are case-insensitive
// ({fy}, {seq:5}). It fails with ErrInvalidFormat, saying which rule is
// broken, when s
//   - contains anything but A-Z, a-z, 0-9, '/', '-' and the placeholders
//     {FY}, {SEQ} and {SEQ:N} with N from 1 to 15, or has unbalanced braces;
//   - does not have exactly one {SEQ} or {SEQ:N};
//   - could render, for some year in MinFY..MaxFY and serial in
//     1..Capacity, a number that does not match the IRP document-number
//     pattern ^[A-Z1-9][A-Z0-9/-]{0,15}$: longer than 16 characters, or
//     starting with '0', '/' or '-'.
//
// An unpadded {SEQ} may grow to whatever length the rest of the format
// leaves free of the 16; a format that leaves no room at all is refused.
func ParseFormat(s string) (Format, error) {
	if err := checkFormatASCII(s); err != nil {
		return Format{}, err
	}
	f, err := scanFormat(s)
	if err != nil {
		return Format{}, err
	}
	if err := f.fitDigits(); err != nil {
		return Format{}, err
	}
	if err := f.checkFirstChar(); err != nil {
		return Format{}, err
	}
	return f, nil
}

// checkFormatASCII fails with ErrInvalidFormat when the format s is empty
// or holds a character outside ASCII.
func checkFormatASCII(s string) error {
	if s == "" {
		return apperr.Errorf(ErrInvalidFormat, "format is empty")
	}
	for _, r := range s {
		if r >= utf8.RuneSelf {
			return apperr.Errorf(ErrInvalidFormat, "format %+q contains the non-ASCII character %+q; numbers have only %s", s, r, numberChars)
		}
	}
	return nil
}

// scanFormat returns the Format that the ASCII format s spells: its
// literals upper-cased, {FY} as fyToken, split into the prefix and suffix
// of its one {SEQ}, and the {SEQ:N} width (0 unpadded); its digits are not
// yet set. It fails with ErrInvalidFormat on a character numbers cannot
// hold, an unbalanced brace, an unknown placeholder, a bad width, or not
// exactly one {SEQ}.
func scanFormat(s string) (Format, error) {
	var f Format
	var parts [2]strings.Builder // before and after {SEQ}
	seqs := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '{':
			end := strings.IndexAny(s[i+1:], "{}")
			if end < 0 || s[i+1+end] == '{' {
				return Format{}, apperr.Errorf(ErrInvalidFormat, "format %q: the '{' at position %d is not closed by '}'", s, i+1)
			}
			inner := s[i+1 : i+1+end]
			switch name := strings.ToUpper(inner); {
			case name == "FY":
				parts[seqs].WriteString(fyToken)
			case name == "SEQ" || strings.HasPrefix(name, "SEQ:"):
				if seqs > 0 {
					return Format{}, apperr.Errorf(ErrInvalidFormat, "format %q has more than one {SEQ}; it needs exactly one", s)
				}
				width, err := seqWidth(s, inner)
				if err != nil {
					return Format{}, err
				}
				f.width = width
				seqs++
			default:
				return Format{}, apperr.Errorf(ErrInvalidFormat, "format %q: {%s} is not a placeholder; use {FY}, {SEQ} or {SEQ:N}", s, inner)
			}
			i += end + 1
		case c == '}':
			return Format{}, apperr.Errorf(ErrInvalidFormat, "format %q: the '}' at position %d has no '{'", s, i+1)
		case c >= 'a' && c <= 'z':
			parts[seqs].WriteByte(c - 'a' + 'A')
		case isASCIIUpper(c) || isASCIIDigit(c) || c == '/' || c == '-':
			parts[seqs].WriteByte(c)
		case c == ' ':
			return Format{}, apperr.Errorf(ErrInvalidFormat, "format %q has a space at position %d; numbers have only %s", s, i+1, numberChars)
		default:
			return Format{}, apperr.Errorf(ErrInvalidFormat, "format %q: the character %q at position %d is not allowed; numbers have only %s", s, c, i+1, numberChars)
		}
	}
	if seqs == 0 {
		return Format{}, apperr.Errorf(ErrInvalidFormat, "format %q has no {SEQ}; it needs exactly one {SEQ} or {SEQ:N}", s)
	}
	f.prefix, f.suffix = parts[0].String(), parts[1].String()
	return f, nil
}

// seqWidth returns the width of the placeholder inner ("SEQ" or "SEQ:N",
// any case) of format s: 0 for SEQ, else N. It fails with ErrInvalidFormat
// unless N is a number from 1 to maxSeqWidth.
func seqWidth(s, inner string) (int, error) {
	if len(inner) == len("SEQ") {
		return 0, nil
	}
	w := inner[len("SEQ:"):]
	n, err := strconv.Atoi(w) // accepts a sign, which the digit check refuses
	if err != nil || len(w) > 2 || !isASCIIDigit(w[0]) || n < 1 || n > maxSeqWidth {
		return 0, apperr.Errorf(ErrInvalidFormat, "format %q: in {%s} the width must be a number from 1 to %d, as in {SEQ:5}", s, inner, maxSeqWidth)
	}
	return n, nil
}

// fitDigits sets f's digits: its width, or, unpadded, whatever the rest of
// the format leaves free of a number's maxNumberLen characters. It fails
// with ErrInvalidFormat when f renders numbers longer than that, or leaves
// no room for the serial.
func (f *Format) fitDigits() error {
	fixed := f.fixedLen()
	switch {
	case f.width > 0 && fixed+f.width > maxNumberLen:
		return apperr.Errorf(ErrInvalidFormat, "format %s renders numbers of %d characters, such as %s; a number has at most %d",
			f.text(), fixed+f.width, f.render(exampleFY, 1), maxNumberLen)
	case f.width == 0 && fixed >= maxNumberLen:
		return apperr.Errorf(ErrInvalidFormat, "format %s leaves no room for {SEQ}: the rest renders %d characters, such as %s, and a number has at most %d",
			f.text(), fixed, fillFY(f.prefix, exampleFY)+fillFY(f.suffix, exampleFY), maxNumberLen)
	case f.width > 0:
		f.digits = f.width
	default:
		f.digits = maxNumberLen - fixed
	}
	return nil
}

// checkFirstChar fails with ErrInvalidFormat when f renders, in some year
// of MinFY..MaxFY, a number that does not start with A-Z or 1-9.
func (f Format) checkFirstChar() error {
	// The first character comes from the first literal, the first {FY} or
	// the serial's first digit, which is '0' at serial 1 exactly when the
	// serial is padded to two or more digits; the year matters only through
	// a {FY} before the serial. So serial 1 in every year that matters shows
	// every possible first character.
	lo, hi := exampleFY, exampleFY
	if strings.Contains(f.prefix, fyToken) {
		lo, hi = MinFY, MaxFY
	}
	for y := lo; y <= hi; y++ {
		if n := f.render(y, 1); !validFirstChar(n[0]) {
			return apperr.Errorf(ErrInvalidFormat, "format %s renders numbers starting with %q, such as %s; a number must start with A-Z or 1-9",
				f.text(), n[0], n)
		}
	}
	return nil
}

// String returns f in normalised form: upper case, {FY}, and {SEQ} or
// {SEQ:N}. It returns "" for the zero Format. ParseFormat of the result
// returns f again.
func (f Format) String() string {
	if f.digits == 0 {
		return ""
	}
	return f.text()
}

// text returns f's normalised form, whatever its validity.
func (f Format) text() string {
	seq := "{SEQ}"
	if f.width > 0 {
		seq = "{SEQ:" + strconv.Itoa(f.width) + "}"
	}
	return f.prefix + seq + f.suffix
}

// Capacity returns the largest serial f renders: 10^N − 1 for {SEQ:N}, and
// for {SEQ} 10^D − 1, where D is the 16 characters less what the rest of the
// format renders. It returns 0 for the zero Format.
func (f Format) Capacity() int64 {
	c := int64(1)
	for range f.digits {
		c *= 10
	}
	return c - 1
}

// MinLen returns the length of f's shortest number (serial 1), or 0 for the
// zero Format.
func (f Format) MinLen() int {
	if f.digits == 0 {
		return 0
	}
	return f.fixedLen() + max(f.width, 1)
}

// MaxLen returns the length of f's longest number (serial Capacity), at most
// 16, or 0 for the zero Format.
func (f Format) MaxLen() int {
	if f.digits == 0 {
		return 0
	}
	return f.fixedLen() + f.digits
}

// Render returns the document number for serial in financial year fy. It
// fails with ErrInvalidFormat for the zero Format, ErrInvalidDate when fy is
// outside MinFY..MaxFY, ErrInvalidSeries when serial is below 1, and
// ErrExhausted when serial is above Capacity.
func (f Format) Render(fy FY, serial int64) (string, error) {
	switch {
	case f.digits == 0:
		return "", apperr.Errorf(ErrInvalidFormat, "format is empty")
	case !fy.Valid():
		return "", apperr.Errorf(ErrInvalidDate, "financial year %s is outside %s to %s", fy, MinFY, MaxFY)
	case serial < 1:
		return "", apperr.Errorf(ErrInvalidSeries, "serial %d is not a serial; serials start at 1", serial)
	case serial > f.Capacity():
		return "", apperr.Errorf(ErrExhausted, "format %s has no number for serial %d in %s; its last is %s",
			f.text(), serial, fy, f.render(fy, f.Capacity()))
	}
	return f.render(fy, serial), nil
}

// render returns the number for fy and serial without checking either.
func (f Format) render(fy FY, serial int64) string {
	seq := strconv.FormatInt(serial, 10)
	if pad := f.width - len(seq); pad > 0 {
		seq = strings.Repeat("0", pad) + seq
	}
	return fillFY(f.prefix, fy) + seq + fillFY(f.suffix, fy)
}

// fillFY returns the normalised format text part with each {FY} rendered for fy.
func fillFY(part string, fy FY) string {
	return strings.ReplaceAll(part, fyToken, fy.Short())
}

// fixedLen returns how many characters f renders besides the serial.
func (f Format) fixedLen() int {
	n := strings.Count(f.prefix, fyToken) + strings.Count(f.suffix, fyToken)
	return len(f.prefix) + len(f.suffix) + n*(fyRenderLen-len(fyToken))
}

// validFirstChar reports whether c may start a document number: A-Z or 1-9.
func validFirstChar(c byte) bool { return isASCIIUpper(c) || c >= '1' && c <= '9' }

// Overlap reports whether a and b can render the same number in the same
// financial year: whether there are a year y in MinFY..MaxFY and serials
// s1 in 1..a.Capacity() and s2 in 1..b.Capacity() with
// a.Render(y, s1) == b.Render(y, s2). When they can, example is one such
// number. The decision is exact. A format overlaps itself; the zero Format
// overlaps nothing.
func Overlap(a, b Format) (example string, overlap bool) {
	example, _, overlap = overlapIn(a, b, MinFY, MaxFY)
	return example, overlap
}

// overlapIn is Overlap for the years lo..hi; it also returns the year of the
// example.
//
// In one year every {FY} is a literal, and a number of length L is a
// sequence of positions, each a literal character or a digit of the serial.
// A digit of {SEQ} is 1-9 at its first position and 0-9 after; a digit of
// {SEQ:N} is 0-9, and the N digits must not all be 0. For each year and each
// length both formats render, intersect the characters allowed at each
// position: an empty set rules the length out. Otherwise the positions are
// independent, so a common number exists exactly when each padded serial has
// a position whose set holds a non-zero digit.
func overlapIn(a, b Format, lo, hi FY) (example string, fy FY, overlap bool) {
	if a.digits == 0 || b.digits == 0 {
		return "", 0, false
	}
	if !strings.Contains(a.text()+b.text(), fyToken) {
		hi = lo // the year changes nothing
	}
	minL, maxL := max(a.MinLen(), b.MinLen()), min(a.MaxLen(), b.MaxLen())
	for y := lo; y <= hi; y++ {
		sa, sb := a.shapeIn(y), b.shapeIn(y)
		for l := minL; l <= maxL; l++ {
			if n, ok := overlapAt(sa, sb, l); ok {
				return n, y, true
			}
		}
	}
	return "", 0, false
}

// charSet is a set of number characters: bit c-'-' stands for c, which
// spans '-' (45) to 'Z' (90).
type charSet uint64

const (
	digitSet   charSet = (1<<10 - 1) << ('0' - '-') // 0-9
	nonZeroSet charSet = (1<<9 - 1) << ('1' - '-')  // 1-9
)

func charOf(c byte) charSet { return 1 << (c - '-') }

// shape is a format's numbers in one year: the text around the serial, with
// each {FY} rendered.
type shape struct {
	pre, suf      string
	width, digits int // as in Format
}

// shapeIn returns f's shape in year y.
func (f Format) shapeIn(y FY) shape {
	return shape{fillFY(f.prefix, y), fillFY(f.suffix, y), f.width, f.digits}
}

// runLen returns the length of the serial in the numbers of length l, or 0
// when there are no numbers of length l.
func (s shape) runLen(l int) int {
	n := l - len(s.pre) - len(s.suf)
	if n < 1 || n > s.digits || s.width > 0 && n != s.width {
		return 0
	}
	return n
}

// at returns the characters allowed at position i of the numbers whose
// serial is n digits long.
func (s shape) at(i, n int) charSet {
	switch {
	case i < len(s.pre):
		return charOf(s.pre[i])
	case i == len(s.pre) && s.width == 0:
		return nonZeroSet // an unpadded serial has no leading zero
	case i < len(s.pre)+n:
		return digitSet
	}
	return charOf(s.suf[i-len(s.pre)-n])
}

// overlapAt returns a number of length l that both a and b render, if there
// is one.
func overlapAt(a, b shape, l int) (string, bool) {
	na, nb := a.runLen(l), b.runLen(l)
	if na == 0 || nb == 0 {
		return "", false
	}
	var sets [maxNumberLen]charSet
	var num [maxNumberLen]byte
	for i := range l {
		if sets[i] = a.at(i, na) & b.at(i, nb); sets[i] == 0 {
			return "", false
		}
		num[i] = '-' + byte(bits.TrailingZeros64(uint64(sets[i])))
	}
	// Each padded serial that came out all zeros takes a non-zero digit at
	// the last of its positions that allows one; if none does, the serial
	// can only be 0.
	for _, r := range [2]struct {
		padded     bool
		start, end int
	}{{a.width > 0, len(a.pre), len(a.pre) + na}, {b.width > 0, len(b.pre), len(b.pre) + nb}} {
		if !r.padded || strings.Trim(string(num[r.start:r.end]), "0") != "" {
			continue
		}
		i := r.end - 1
		for i >= r.start && sets[i]&nonZeroSet == 0 {
			i--
		}
		if i < r.start {
			return "", false
		}
		num[i] = '-' + byte(bits.TrailingZeros64(uint64(sets[i]&nonZeroSet)))
	}
	return string(num[:l]), true
}
