package bench

import (
	"slices"
	"time"
)

// Median is the median of ds (the upper one of an even number).
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// Discard is a plugin's output that keeps nothing.
type Discard struct{}

func (Discard) Write(p []byte) (int, error) { return len(p), nil }

// Tail is always empty.
func (Discard) Tail() []string { return nil }
