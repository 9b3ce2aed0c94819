package main

import (
	"fmt"
	"time"

	"github.com/graftland/graft/spec"
)

// positiveDuration reads a flag's duration in graft's one duration syntax,
// that of plugins.yaml, Effect style ("15 seconds", "500 millis"): finite
// and positive. See docs/semantics.md, "Windows and defaults".
func positiveDuration(flag, s string) (time.Duration, error) {
	d, err := spec.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", flag, err)
	}
	if d.Infinite() || d.Std() <= 0 {
		return 0, fmt.Errorf("%s %q: must be finite and positive", flag, s)
	}
	return d.Std(), nil
}
