//go:build linux

package host

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/placement/local"
)

// TestRecordedBeforeReady: a local plugin is recorded in the state dir
// before its ready check, while it runs, so that a host killed during the
// check leaves nothing untracked; a start whose check fails leaves no
// record and no process.
func TestRecordedBeforeReady(t *testing.T) {
	dir := t.TempDir()
	h := open(t, filepath.Join(dir, ".graft"))
	defer h.Shutdown(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there: the check never passes
	yaml := fmt.Sprintf("name: shop\nplugins:\n  slow: {command: [sleep, '60'], ready: {tcp: '%s', timeout: 2 seconds}}\n", addr)
	applied := make(chan error, 1)
	go func() {
		_, err := h.Apply(context.Background(), hostapi.ApplyRequest{Source: source(t, dir, yaml), Holder: "test"}, nil)
		applied <- err
	}()

	records := filepath.Join(dir, ".graft", instancesDir)
	var marks []string
	require.Eventually(t, func() bool {
		ents, _ := os.ReadDir(records)
		marks = marks[:0]
		for _, e := range ents {
			marks = append(marks, local.EnvInvocation+"="+e.Name())
		}
		left, _ := proc.Marked(marks)
		for _, m := range left {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", m.Pid))
			if strings.Split(string(b), "\x00")[0] == "sleep" {
				return len(marks) == 1
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "a record, and the plugin carrying its invocation id, during the ready check")
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
