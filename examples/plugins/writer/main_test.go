package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv("WRITER_RUN_MAIN") != "" {
		os.Args = append([]string{"writer"}, strings.Fields(os.Getenv("WRITER_RUN_MAIN"))...)
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

// TestClaims runs the writer as a program, as graft would start it and by
// hand, and reads the ledger: the table of identities of docs/semantics.md,
// "Identity and generations".
func TestClaims(t *testing.T) {
	ledger := filepath.Join(t.TempDir(), "ledger.txt")
	run := func(env ...string) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "WRITER_RUN_MAIN=-once -ledger "+ledger, "GRAFT_INSTANCE_ID=", "GRAFT_GENERATION=")
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	run()
	run("GRAFT_INSTANCE_ID=6b0c1d52-3f1e-4c5a-9e21-0f2a3b4c5d6e", "GRAFT_GENERATION=1")
	run("GRAFT_INSTANCE_ID=shop.writer", "GRAFT_GENERATION=7")
	b, err := os.ReadFile(ledger)
	require.NoError(t, err)
	assert.Equal(t, "owner=local generation=0\n"+
		"owner=6b0c1d52-3f1e-4c5a-9e21-0f2a3b4c5d6e generation=1\n"+
		"owner=shop.writer generation=7\n", string(b))
}
