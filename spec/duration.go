package spec

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/graftland/graft/launch"
)

// Duration is a span of time written the way Effect reads duration strings
// (Duration.decode in Effect 3, Effect 4.x Duration.fromInputUnsafe), so one
// spec file means the same thing to graft and to the Effect programs it
// runs. The accepted strings are exactly those of Effect 4.x
// Duration.fromInputUnsafe:
//
//	"Infinity", "-Infinity"     infinite, exactly as written
//	"<number> <unit>"           finite
//
// The number is an optional "-", one or more ASCII digits, and optionally "."
// and one or more digits: no "+", no exponent, no ".5" or "1.". Between number
// and unit comes one or more characters of JavaScript's \s class (which is
// not Go's unicode.IsSpace: it has U+FEFF but not U+0085). The unit is one of
// nano, micro, milli, second, minute, hour, day, week, lower case, singular or
// plural. Nothing may come before the number or after the unit.
//
// The value is exact: the decimal number times the unit, rounded to the
// nearest nanosecond, ties away from zero. Effect itself multiplies in
// float64 for millis and longer units, which can be off by a nanosecond or
// so in long numbers; exactness makes the result independent of that. Finite
// values must fit a time.Duration, since that is what graft runs on. Where
// Effect's float64 product overflows to Infinity (number × the unit's
// milliseconds is not a finite float64, for millis and longer units) the
// result is infinite here too, so such a spec means the same thing in both.
//
// The zero Duration is zero. Durations are comparable with ==.
type Duration struct {
	ns  int64 // the value, when inf is 0
	inf int8  // 0 finite, +1 +Infinity, -1 -Infinity
}

// DurationError is the error ParseDuration returns, always as a
// *DurationError.
type DurationError struct {
	// Input is the rejected text, verbatim.
	Input string
	// OutOfRange is set when Input is well formed but its finite value lies
	// outside time.Duration's range. Otherwise Input is not a duration at
	// all.
	OutOfRange bool
}

func (e *DurationError) Error() string {
	if e.OutOfRange {
		return fmt.Sprintf("duration %q is out of range: finite durations lie between "+
			"%d nanos and %d nanos (about ±292 years)", e.Input, math.MinInt64, math.MaxInt64)
	}
	return fmt.Sprintf("invalid duration %q: want a number and a unit such as "+
		`"30 seconds" or "1.5 minutes"; units: nanos, micros, millis, seconds, `+
		"minutes, hours, days, weeks (singular or plural)", e.Input)
}

// durationUnits lists the units from largest to smallest, the order String
// looks for the largest exact one.
var durationUnits = [...]struct {
	name   string  // singular; the plural adds "s"
	ns     int64   // nanoseconds in one unit
	millis float64 // Effect's float64 multiplier to millis; 0 if Effect uses bigint nanos, which never overflow
}{
	{"week", 604800e9, 604800000},
	{"day", 86400e9, 86400000},
	{"hour", 3600e9, 3600000},
	{"minute", 60e9, 60000},
	{"second", 1e9, 1000},
	{"milli", 1e6, 1},
	{"micro", 1e3, 0},
	{"nano", 1, 0},
}

// ParseDuration reads s as Effect 4.x Duration.fromInputUnsafe reads a string
// (see Duration for the grammar). A string that is not a duration, and a
// finite value that does not fit a time.Duration, are a *DurationError.
func ParseDuration(s string) (Duration, error) {
	switch s {
	case "Infinity":
		return Duration{inf: 1}, nil
	case "-Infinity":
		return Duration{inf: -1}, nil
	}
	neg, whole, frac, unit, ok := scanDuration(s)
	if !ok {
		return Duration{}, &DurationError{Input: s}
	}
	u := durationUnits[unit]
	if mag, ok := magnitude(whole, frac, uint64(u.ns)); ok {
		switch {
		case !neg && mag <= math.MaxInt64:
			return Duration{ns: int64(mag)}, nil
		case neg && mag <= 1<<63:
			// For mag == 1<<63 the conversion gives math.MinInt64, and so
			// does its negation, which is the value wanted.
			return Duration{ns: -int64(mag)}, nil
		}
	}
	// Out of range. Effect computes number × unit in float64 for millis and
	// longer units, and an overflow there is Infinity. Only an out-of-range
	// value can get there: an in-range one is below 1e13 millis.
	if u.millis != 0 {
		// ParseFloat rounds as JavaScript's Number does, and gives ±Inf
		// (with ErrRange) for a digit string too large for a float64.
		f, _ := strconv.ParseFloat(numberText(s), 64)
		if p := f * u.millis; math.IsInf(p, 0) {
			if p > 0 {
				return Duration{inf: 1}, nil
			}
			return Duration{inf: -1}, nil
		}
	}
	return Duration{}, &DurationError{Input: s, OutOfRange: true}
}

// numberText returns the number at the start of a string scanDuration
// accepted: everything up to the first byte that is not '-', '.' or a digit.
func numberText(s string) string {
	i := 0
	for i < len(s) && (s[i] == '-' || s[i] == '.' || '0' <= s[i] && s[i] <= '9') {
		i++
	}
	return s[:i]
}

// scanDuration matches s, whole, against Effect's
//
//	^(-?\d+(?:\.\d+)?)\s+(nanos?|micros?|millis?|seconds?|minutes?|hours?|days?|weeks?)$
//
// with JavaScript's meaning of \d, \s and $. It returns the sign, the digits
// before and after the point, and the index of the unit in durationUnits.
func scanDuration(s string) (neg bool, whole, frac string, unit int, ok bool) {
	i := 0
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	j := skipDigits(s, i)
	if j == i {
		return false, "", "", 0, false
	}
	whole, i = s[i:j], j
	if i < len(s) && s[i] == '.' {
		j = skipDigits(s, i+1)
		if j == i+1 {
			return false, "", "", 0, false
		}
		frac, i = s[i+1:j], j
	}
	gap := i
	for i < len(s) {
		// Invalid UTF-8 decodes as utf8.RuneError, which is not a space.
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isJSSpace(r) {
			break
		}
		i += size
	}
	if i == gap {
		return false, "", "", 0, false
	}
	name := strings.TrimSuffix(s[i:], "s") // no singular name ends in "s"
	for k, u := range durationUnits {
		if name == u.name {
			return neg, whole, frac, k, true
		}
	}
	return false, "", "", 0, false
}

// skipDigits returns the index of the first byte at or after i that is not an
// ASCII digit.
func skipDigits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// isJSSpace reports whether r is in JavaScript's \s class: WhiteSpace and
// LineTerminator in ECMA-262. Go's unicode.IsSpace differs (it has U+0085
// and lacks U+FEFF), and a spec must read the same in graft as in Effect.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', '\u00a0', '\u1680',
		'\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff':
		return true
	}
	return '\u2000' <= r && r <= '\u200a'
}

// magnitude returns |whole.frac| × unitNs rounded to the nearest integer,
// ties away from zero, and false if that exceeds 1<<63, the largest
// magnitude of a time.Duration.
//
// The arithmetic is exact and needs nothing wider than uint64, however long
// the fraction: math/big would be quadratic in its length, and this runs on
// whatever a spec file holds. The whole part contributes whole × unitNs. A
// fraction f in [0, 1) contributes round(f × unitNs) = ⌊(⌊m × f⌋ + 1) / 2⌋
// with m = 2 × unitNs, and ⌊m × f⌋ comes from Horner's rule over the digits,
// last first: c ← ⌊(c + m × digit) / 10⌋. Flooring at each step loses nothing
// (⌊(⌊x⌋ + k) / 10⌋ = ⌊(x + k) / 10⌋ for whole k), and c stays below m, so
// c + 9m < 10m ≤ 1.3e16 fits.
func magnitude(whole, frac string, unitNs uint64) (uint64, bool) {
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil { // 2^64 units or more
		return 0, false
	}
	hi, n := bits.Mul64(w, unitNs)
	if hi != 0 || n > 1<<63 {
		return 0, false
	}
	m := 2 * unitNs
	var c uint64
	for i := len(frac) - 1; i >= 0; i-- {
		c = (c + m*uint64(frac[i]-'0')) / 10
	}
	n += (c + 1) / 2 // at most unitNs, so n cannot wrap
	return n, n <= 1<<63
}

// FromStd returns the finite Duration d.
func FromStd(d time.Duration) Duration { return Duration{ns: int64(d)} }

// Infinity returns +Infinity, the duration that never elapses.
func Infinity() Duration { return Duration{inf: 1} }

// Infinite reports whether d is +Infinity or -Infinity.
func (d Duration) Infinite() bool { return d.inf != 0 }

// Std returns d as a time.Duration. Infinities saturate: +Infinity is
// math.MaxInt64 (about 292 years) and -Infinity is math.MinInt64, which are
// also finite values, so check Infinite first where the difference matters.
func (d Duration) Std() time.Duration {
	switch d.inf {
	case 1:
		return math.MaxInt64
	case -1:
		return math.MinInt64
	}
	return time.Duration(d.ns)
}

// IsZero reports whether d is the finite duration zero.
func (d Duration) IsZero() bool { return d.inf == 0 && d.ns == 0 }

// String returns the canonical text of d, which ParseDuration reads back to
// d: "Infinity", "-Infinity", "0 seconds", or the value in the largest unit
// that holds it exactly, as in "1 second", "1500 millis" or "-2 weeks".
func (d Duration) String() string {
	switch {
	case d.inf > 0:
		return "Infinity"
	case d.inf < 0:
		return "-Infinity"
	}
	return launch.Duration(d.ns).String()
}

// MarshalText returns the canonical text of d, as String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText sets d to ParseDuration(string(b)). On error d is unchanged.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
