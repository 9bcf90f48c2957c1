package main

import (
	"errors"
	"flag"
	"strconv"
	"strings"
	"time"
)

// errNoUnit is what a duration flag given a bare number fails with: Go's
// own "parse error" does not say what is wrong.
var errNoUnit = errors.New("durations need a unit, e.g. 3s, 500ms or 2m")

// unitDuration wraps a duration flag's value so that a bare number ("3")
// fails with errNoUnit instead of flag's "parse error".
type unitDuration struct{ flag.Value }

// Set stores s, failing with errNoUnit for a number without a unit and with
// time.ParseDuration's error otherwise.
func (d unitDuration) Set(s string) error {
	if _, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && strings.TrimSpace(s) != "0" {
		return errNoUnit
	}
	if _, err := time.ParseDuration(s); err != nil {
		return err
	}
	return d.Value.Set(s)
}

// isDuration reports whether f holds a time.Duration.
func isDuration(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	_, ok = g.Get().(time.Duration)
	return ok
}

// wrapDurations makes every duration flag of fs explain a missing unit. It
// returns a function that puts the original values back (flag's usage
// names a duration's type only for its own value type).
func wrapDurations(fs *flag.FlagSet) (unwrap func()) {
	orig := map[*flag.Flag]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		if isDuration(f) {
			orig[f] = f.Value
			f.Value = unitDuration{f.Value}
		}
	})
	return func() {
		for f, v := range orig {
			f.Value = v
		}
	}
}

// envName is the environment variable of a serve flag: INVOICED_ and the
// flag's name in upper case with dashes as underscores (--lock-timeout is
// INVOICED_LOCK_TIMEOUT).
func envName(flagName string) string {
	return "INVOICED_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// documentEnv appends each flag's environment variable to its usage, so
// -h lists them.
func documentEnv(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		f.Usage += " [env " + envName(f.Name) + "]"
	})
}

// applyEnv sets every flag of fs not given on the command line from its
// environment variable (envName), when that is set and not empty: a flag
// always wins over the environment. It fails with a *usageError naming the
// variable when a value is invalid (for a switch, the values it takes).
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] {
			return
		}
		name := envName(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		val := f.Value
		if isDuration(f) {
			val = unitDuration{val}
		}
		if e := val.Set(v); e != nil {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				err = usageErrorf("%s: %s=%q: want true or false (or 1, 0, t, f)", strings.TrimPrefix(fs.Name(), "invoiced "), name, v)
				return
			}
			err = usageErrorf("%s: %s=%q: %v", strings.TrimPrefix(fs.Name(), "invoiced "), name, v, e)
		}
	})
	return err
}

// unwrapDurations undoes wrapDurations while the usage is printed (flag
// calls the usage from inside Parse); the function it returns wraps them
// again.
func unwrapDurations(fs *flag.FlagSet) (rewrap func()) {
	var wrapped []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if d, ok := f.Value.(unitDuration); ok {
			f.Value = d.Value
			wrapped = append(wrapped, f)
		}
	})
	return func() {
		for _, f := range wrapped {
			f.Value = unitDuration{f.Value}
		}
	}
}

// byteSize is a flag holding a number of bytes, written with a binary unit
// (512MiB, 1GiB, 64KiB) or as a plain number of bytes.
type byteSize int64

// String returns n in the largest binary unit that divides it.
func (n *byteSize) String() string {
	v := int64(*n)
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v != 0 && v%u.size == 0 {
			return strconv.FormatInt(v/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(v, 10)
}

// Set parses s: digits, then KiB, MiB, GiB or nothing (bytes). It fails
// for anything else, naming the units.
func (n *byteSize) Set(s string) error {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if strings.HasSuffix(t, u.name) {
			t, mult = strings.TrimSuffix(t, u.name), u.size
			break
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return errors.New("want a size such as 512MiB, 1GiB or a number of bytes")
	}
	*n = byteSize(v * mult)
	return nil
}
