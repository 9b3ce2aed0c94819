package testprog

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMissing(t *testing.T) {
	assert.Empty(t, Missing("sh", "dash"))
	assert.Equal(t, "graft-no-such-program is not installed: apt-get install graft-pkg",
		Missing("graft-no-such-program", "graft-pkg"))
}

// TestNeed runs Need in a test of its own, in a child process, with and
// without GRAFT_TEST_REQUIRE_ALL: a skip that names the program and its
// package, or a failure.
func TestNeed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	for _, tt := range []struct {
		requireAll string
		fails      bool
		says       string
	}{
		{"", false, "--- SKIP: TestNeedChild"},
		{"1", true, "--- FAIL: TestNeedChild"},
	} {
		cmd := exec.Command(testBinary(t), "-test.run=^TestNeedChild$", "-test.v")
		cmd.Env = append(cmd.Environ(), "GRAFT_TESTPROG_CHILD=1", RequireAllEnv+"="+tt.requireAll)
		out, err := cmd.CombinedOutput()
		assert.Equal(t, tt.fails, err != nil, "%s", out)
		assert.Contains(t, string(out), tt.says)
		assert.Contains(t, string(out), "graft-no-such-program is not installed: apt-get install graft-pkg")
	}
}

func TestNeedChild(t *testing.T) {
	if !childRun() {
		t.Skip("run by TestNeed")
	}
	Need(t, "graft-no-such-program", "graft-pkg")
	t.Log("not reached")
}

func childRun() bool { return os.Getenv("GRAFT_TESTPROG_CHILD") == "1" }

func testBinary(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
