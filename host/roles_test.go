//go:build linux

package host

import (
	"fmt"
	"log/slog"
	"os"
)

// roleEnv names the role the test binary plays when run again by a test.
const roleEnv = "HOST_TEST_ROLE"

// runRole plays role (testsupport.PlayRole), or returns false for a role
// it does not know.
func runRole(role string, _ []string) bool {
	if role != "hostlog" {
		return false
	}
	hostLogMain()
	return true
}

// hostLogMain opens HOST_TEST_DIR's host.log as a background host does,
// rotated at 4 KiB, logs 300 lines into it, prints to its stdout, and
// panics.
func hostLogMain() {
	l, err := openHostLog(os.Getenv("HOST_TEST_DIR"), 4096)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	log := slog.New(slog.NewTextHandler(l, nil))
	for i := range 300 {
		log.Info("a line of the host's log", "i", i)
	}
	fmt.Println("printed to stdout")
	panic("the host's own panic")
}
