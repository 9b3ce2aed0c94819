//go:build linux

package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/testprog"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
)

// TestRecordedBeforeReady: outside a PID namespace, a local plugin is
// recorded in the state dir before its ready check, while it runs, so
// that a host killed during the check leaves nothing untracked; a start
// whose check fails leaves no record and no process. In the host's
// namespace, where nothing can outlive the host, nothing is recorded: the
// plugin carries its invocation id all the same.
func TestRecordedBeforeReady(t *testing.T) {
	t.Run("no namespace", func(t *testing.T) { recordedBeforeReady(t, true) })
	t.Run("namespace", func(t *testing.T) { recordedBeforeReady(t, false) })
}

func recordedBeforeReady(t *testing.T, noNamespace bool) {
	dir := t.TempDir()
	h, err := Open(filepath.Join(dir, ".graft"), Options{Logger: quiet, NoNamespace: noNamespace,
		Timing: runtime.Timing{ShutdownTimeout: time.Second, ExitWindow: 100 * time.Millisecond, KillAfter: 100 * time.Millisecond}})
	require.NoError(t, err)
	defer h.Shutdown(context.Background())
	recorded := !h.local.Isolation().Namespace
	if !noNamespace && recorded {
		testprog.Unavailable(t, "no PID namespace here; as root this runs")
	}
	addr := testsupport.FreeAddr(t) // nothing listens there: the check never passes
	yaml := fmt.Sprintf("name: shop\nplugins:\n  slow: {command: [sleep, '60'], ready: {tcp: '%s', timeout: 2 seconds}}\n", addr)
	applied := make(chan error, 1)
	go func() {
		_, err := h.Apply(context.Background(), ApplyRequest{Source: testsupport.Source(dir, yaml), Holder: "test"}, Report{})
		applied <- err
	}()

	records := filepath.Join(dir, ".graft", instancesDir)
	var marks []string
	require.Eventually(t, func() bool {
		marks = marks[:0]
		if recorded {
			ents, _ := os.ReadDir(records)
			for _, e := range ents {
				marks = append(marks, local.EnvInvocation+"="+e.Name())
			}
		} else if inv := invocationOf(t, "sleep"); inv != "" {
			marks = append(marks, local.EnvInvocation+"="+inv)
		}
		left, _ := proc.Marked(marks)
		for _, m := range left {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", m.Pid))
			if strings.Split(string(b), "\x00")[0] == "sleep" {
				return len(marks) == 1
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "the plugin carrying its invocation id during the ready check, and its record if recorded")
	if !recorded {
		ents, err := os.ReadDir(records)
		require.NoError(t, err)
		assert.Empty(t, ents, "in a namespace, no record")
	}
	select {
	case err := <-applied:
		t.Fatalf("the apply ended during its ready check: %v", err)
	default:
	}

	err = <-applied
	require.Error(t, err, "the ready check times out")
	ents, err := os.ReadDir(records)
	require.NoError(t, err)
	assert.Empty(t, ents, "a failed start leaves no record")
	// A plugin's init, in a PID namespace, ends in the background once
	// it has handed back the plugin's exit: give it a moment.
	assert.Eventually(t, func() bool {
		left, err := proc.Marked(marks)
		return err == nil && len(left) == 0
	}, 2*time.Second, 10*time.Millisecond, "nor any process")
}

// invocationOf is the GRAFT_INVOCATION_ID of a process whose program is
// name and which descends from this test process (a child of its
// namespace's init, or its own), or "".
func invocationOf(t *testing.T, name string) string {
	t.Helper()
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !descends(pid, os.Getpid()) {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || strings.Split(string(b), "\x00")[0] != name {
			continue
		}
		env, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, local.EnvInvocation+"="); ok {
				return v
			}
		}
	}
	return ""
}

// descends reports whether pid is a child or a grandchild of ancestor.
func descends(pid, ancestor int) bool {
	for range 2 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		i := strings.LastIndexByte(string(b), ')')
		if err != nil || i < 0 {
			return false
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			return false
		}
		if pid, _ = strconv.Atoi(f[1]); pid == ancestor {
			return true
		}
	}
	return false
}
