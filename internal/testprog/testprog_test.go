package testprog

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMissing(t *testing.T) {
	assert.Empty(t, Missing("sh", "dash"))
	assert.Equal(t, "graft-no-such-program is not installed: apt-get install graft-pkg",
		Missing("graft-no-such-program", "graft-pkg"))
}

// ended records how Unavailable ended a test. It stands in for
// *testing.T, whose Skip and Fatalf would end this test itself.
type ended struct{ skipped, failed string }

func (e *ended) Helper()                           {}
func (e *ended) Skip(args ...any)                  { e.skipped = fmt.Sprint(args...) }
func (e *ended) Fatalf(format string, args ...any) { e.failed = fmt.Sprintf(format, args...) }

// TestNeed: a missing program skips the test, naming the program and its
// package; under GRAFT_TEST_REQUIRE_ALL=1 it fails it; one on PATH does
// neither.
func TestNeed(t *testing.T) {
	for _, tt := range []struct {
		requireAll string
		want       ended
	}{
		{"", ended{skipped: "graft-no-such-program is not installed: apt-get install graft-pkg"}},
		{"1", ended{failed: "graft-no-such-program is not installed: apt-get install graft-pkg (GRAFT_TEST_REQUIRE_ALL=1: no test may be skipped)"}},
	} {
		t.Setenv(RequireAllEnv, tt.requireAll)
		var got ended
		Need(&got, "graft-no-such-program", "graft-pkg")
		assert.Equal(t, tt.want, got, "%s=%q", RequireAllEnv, tt.requireAll)

		got = ended{}
		Need(&got, "sh", "dash")
		assert.Equal(t, ended{}, got, "a program on PATH")
	}
}
