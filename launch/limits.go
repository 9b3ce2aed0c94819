package launch

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// LimitNames are the resource limits a process may be given, by their
// lower-case names without RLIMIT_ (getrlimit(2)).
var LimitNames = []string{"as", "core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue",
	"nice", "nofile", "nproc", "rss", "rtprio", "rttime", "sigpending", "stack"}

// Unlimited is a limit's RLIM_INFINITY, written "unlimited".
const Unlimited = LimitValue(math.MaxUint64)

// LimitValue is one side of a resource limit: a number, or Unlimited.
// Its text is the decimal number or "unlimited", in YAML and JSON alike.
type LimitValue uint64

// MarshalText writes v as "unlimited" or its number.
func (v LimitValue) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads what MarshalText wrote.
func (v *LimitValue) UnmarshalText(b []byte) error {
	s := string(b)
	if s == "unlimited" {
		*v = Unlimited
		return nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == math.MaxUint64 {
		return fmt.Errorf("want a number from 0 to %d, or unlimited, got %q", uint64(math.MaxUint64-1), s)
	}
	*v = LimitValue(n)
	return nil
}

func (v LimitValue) String() string {
	if v == Unlimited {
		return "unlimited"
	}
	return strconv.FormatUint(uint64(v), 10)
}

// Limit is a resource limit: its soft value, which the process meets,
// and its hard one, up to which it may raise the soft one.
type Limit struct {
	Soft LimitValue `json:"soft"`
	Hard LimitValue `json:"hard"`
}

// limits checks resource limits: known names, and soft at most hard.
func (c *checker) limits(ls map[string]Limit) {
	for _, name := range slices.Sorted(maps.Keys(ls)) {
		field := "limits." + name
		if !slices.Contains(LimitNames, name) {
			p := c.add(field, "unknown resource limit %q; want one of %s", name, strings.Join(LimitNames, ", "))
			p.Key, p.Value, p.Choices = true, name, LimitNames
			if low := strings.TrimPrefix(strings.ToLower(name), "rlimit_"); slices.Contains(LimitNames, low) {
				p.Suggest = low
			}
			continue
		}
		if l := ls[name]; l.Soft > l.Hard {
			c.add(field, "soft %s is above hard %s", l.Soft, l.Hard)
		}
	}
}

// umask checks a umask: an octal string of up to four digits, at most
// 0777.
func (c *checker) umask(v string) {
	if !c.is("umask", v != "") {
		return
	}
	if _, err := ParseUmask(v); err != nil {
		c.add("umask", "%v", err)
	}
}

// ParseUmask reads a umask written in octal: "007", "0022".
func ParseUmask(v string) (uint32, error) {
	n, err := strconv.ParseUint(v, 8, 32)
	if err != nil || len(v) > 4 || n > 0o777 || strings.Trim(v, "01234567") != "" {
		return 0, fmt.Errorf("bad umask %q: want octal digits from \"000\" to \"777\", such as \"007\"", v)
	}
	return uint32(n), nil
}
