package launch

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Duration is a window of a check. It crosses the runner's wire as a
// whole number of milliseconds (docs/runner-api.md), which is how its
// JSON names it ("timeoutMillis"); zero means the field's default.
type Duration time.Duration

// Std is d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// MarshalJSON writes d in whole milliseconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strconv.AppendInt(nil, time.Duration(d).Milliseconds(), 10), nil
}

// UnmarshalJSON reads a whole number of milliseconds; one too large for
// a time.Duration is refused.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var ms int64
	if err := json.Unmarshal(b, &ms); err != nil {
		return err
	}
	if ms > math.MaxInt64/int64(time.Millisecond) || ms < math.MinInt64/int64(time.Millisecond) {
		return fmt.Errorf("%d milliseconds: out of range", ms)
	}
	*d = Duration(time.Duration(ms) * time.Millisecond)
	return nil
}

// units are the units a Duration is written in, largest first.
var units = [...]struct {
	name string // singular; the plural adds "s"
	ns   int64
}{
	{"week", 604800e9}, {"day", 86400e9}, {"hour", 3600e9}, {"minute", 60e9},
	{"second", 1e9}, {"milli", 1e6}, {"micro", 1e3}, {"nano", 1},
}

// String writes d as plugins.yaml does, in its largest exact unit: "30
// seconds", "1 minute", "1500 millis".
func (d Duration) String() string {
	ns := int64(d)
	if ns == 0 {
		return "0 seconds"
	}
	for _, u := range units {
		if ns%u.ns != 0 {
			continue
		}
		n := ns / u.ns
		if n == 1 || n == -1 {
			return strconv.FormatInt(n, 10) + " " + u.name
		}
		return strconv.FormatInt(n, 10) + " " + u.name + "s"
	}
	panic("unreachable: every value is a whole number of nanos")
}
