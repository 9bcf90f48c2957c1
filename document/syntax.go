package document

// Hand-written forms of the syntax checks Prepare makes on every item (HSN,
// amounts, the place of supply), cheaper than regular expressions on the
// hot path (docs/bench.md, "The batch route's CPU per invoice");
// syntax_test.go checks each against the expression it stands for.

// isDigits reports whether s is min to max ASCII digits (the regular
// expression ^[0-9]{min,max}$).
func isDigits(s string, min, max int) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isAmount reports whether s is 1 to 15 digits, then optionally a point
// and at least one digit (^[0-9]{1,15}(\.[0-9]+)?$).
func isAmount(s string) bool {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 15 {
		return false
	}
	if i == len(s) {
		return true
	}
	return s[i] == '.' && isDigits(s[i+1:], 1, len(s))
}
