package testsupport

import (
	"fmt"
	"os"
	"testing"

	"github.com/graftland/graft/internal/testprog"
)

// NeedNamespace ends t where processes get no PID namespace of their
// own: why, the reason a spawner gives (proc.Isolation's Err), is not
// nil. As root they always can, so there t fails; otherwise it is
// skipped, or fails under GRAFT_TEST_REQUIRE_ALL=1 (testprog.Unavailable).
func NeedNamespace(t testing.TB, why error) {
	t.Helper()
	switch {
	case why == nil:
	case os.Geteuid() == 0:
		t.Fatalf("no PID namespace, as root: %v", why)
	default:
		testprog.Unavailable(t, fmt.Sprintf("no PID namespace here (%v); as root this test runs", why))
	}
}
