package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Size is an amount of memory, written as a whole number and a binary
// unit: "64 MiB", "512 KiB", "1 GiB".
type Size int64

var sizeUnits = []struct {
	name  string
	bytes int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// ParseSize reads a Size.
func ParseSize(s string) (Size, error) {
	num, unit, ok := strings.Cut(s, " ")
	if ok {
		for _, u := range sizeUnits {
			if unit != u.name {
				continue
			}
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil || n < 0 || n > math.MaxInt64/u.bytes {
				break
			}
			return Size(n * u.bytes), nil
		}
	}
	return 0, fmt.Errorf("invalid size %q: want a whole number and a unit, such as \"64 MiB\"; units: B, KiB, MiB, GiB", s)
}

// String gives the size in the largest unit that divides it.
func (s Size) String() string {
	for _, u := range sizeUnits {
		if s != 0 && int64(s)%u.bytes == 0 {
			return fmt.Sprintf("%d %s", int64(s)/u.bytes, u.name)
		}
	}
	return "0 B"
}

// MarshalText gives String.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText is ParseSize.
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
