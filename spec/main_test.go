package spec

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/errors")

// roleEnv, set, makes this test binary a helper that another user runs
// (internal/asnobody), instead of the tests.
const roleEnv = "SPEC_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
		goleak.VerifyTestMain(m)
	case "parse-to-start": // parses args[1] as the host that starts it does, and prints the error
		data, err := os.ReadFile(os.Args[1])
		if err == nil {
			_, err = ParseWith("plugins.yaml", "/", data, Options{Starts: true})
		}
		fmt.Println(err)
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown role")
		os.Exit(2)
	}
}
