package testsupport

import (
	"testing"
	"time"

	"github.com/graftland/graft/runtime/runtimetest"
)

// WaitGone waits until no pid names a live process (runtimetest.Gone:
// none, or a zombie), and returns when it saw the last of them gone; t
// fails should one still run within after the call. It polls every 2 ms,
// so that the time it returns is close to when that was.
func WaitGone(t testing.TB, within time.Duration, pids ...int) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, pid := range pids {
		for !runtimetest.Gone(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still runs %s later", pid, within)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return time.Now()
}
