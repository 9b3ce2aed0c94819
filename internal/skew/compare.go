package skew

import (
	"strconv"
	"strings"
)

// Older reports whether a is an earlier release than b. Both must be
// release versions, vMAJOR.MINOR.PATCH with an optional -PRERELEASE and
// an optional +BUILD, ordered as semantic versioning orders them (+BUILD
// ignored; a build of a commit, which Go names by the commit's time, as
// v0.0.0-20260102150405-abcdef123456, orders by that time). A version
// that is not one, such as "devel" (a build with no version recorded), is
// older and newer than nothing: Older is false.
func Older(a, b string) bool {
	va, oka := parse(a)
	vb, okb := parse(b)
	return oka && okb && compare(va, vb) < 0
}

// semver is a release version, parsed.
type semver struct {
	core [3]int
	pre  []string // the dot-separated identifiers of -PRERELEASE; none for a release
}

func parse(v string) (semver, bool) {
	var s semver
	rest, ok := strings.CutPrefix(v, "v")
	if !ok {
		return s, false
	}
	rest, _, _ = strings.Cut(rest, "+")
	rest, pre, hasPre := strings.Cut(rest, "-")
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return s, false
	}
	for i, p := range parts {
		n, ok := number(p)
		if !ok {
			return s, false
		}
		s.core[i] = n
	}
	if hasPre {
		s.pre = strings.Split(pre, ".")
		for _, id := range s.pre {
			if id == "" || strings.Trim(id, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-") != "" {
				return s, false
			}
		}
	}
	return s, true
}

// number is a numeric identifier: digits, with no leading zero.
func number(p string) (int, bool) {
	if p == "" || len(p) > 1 && p[0] == '0' || strings.Trim(p, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(p)
	return n, err == nil
}

// compare is -1, 0 or 1 as a is before, the same as or after b.
func compare(a, b semver) int {
	for i := range a.core {
		if a.core[i] != b.core[i] {
			return sign(a.core[i] - b.core[i])
		}
	}
	switch {
	case len(a.pre) == 0 && len(b.pre) == 0:
		return 0
	case len(a.pre) == 0:
		return 1 // a release comes after its prereleases
	case len(b.pre) == 0:
		return -1
	}
	for i := 0; i < len(a.pre) && i < len(b.pre); i++ {
		if c := compareID(a.pre[i], b.pre[i]); c != 0 {
			return c
		}
	}
	return sign(len(a.pre) - len(b.pre))
}

// compareID orders two prerelease identifiers: numbers by value, before
// any other identifier; others by their bytes.
func compareID(a, b string) int {
	na, numA := number(a)
	nb, numB := number(b)
	switch {
	case numA && numB:
		return sign(na - nb)
	case numA:
		return -1
	case numB:
		return 1
	}
	return strings.Compare(a, b)
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
