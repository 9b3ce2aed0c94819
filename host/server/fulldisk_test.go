//go:build linux

package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// TestFullDisk: with its state dir on a small file system that a plugin's
// output fills, a host keeps working. The log stops at the reserve, with
// one notice, and the plugin goes on unblocked; an apply still records its
// spec in the reserve; once the disk is full to the last byte an apply
// fails, naming applied.json, and leaves the last good spec, which the
// host keeps running and a host started again on the full disk runs
// again, writing nothing. When room returns, the log resumes.
//
// The host runs in a mount namespace of its own, in a child process, with
// its state dir on a 2 MiB tmpfs, so the disk is full for real; the test
// reaches that file system through /proc/PID/root.
func TestFullDisk(t *testing.T) {
	dir := t.TempDir()
	c := testsupport.StartChild(t, roleEnv, "tmpfs-host", "HOST_TEST_DIR="+dir, "HOST_TEST_TMPFS=2m")
	c.State = filepath.Join("/proc", strconv.Itoa(c.Cmd.Process.Pid), "root", dir)
	require.Equal(t, "ready <nil>", c.Say(t, "open"), "a host on a tmpfs in a mount namespace of its own: %s", c.Log)
	cl, err := hostapi.NewClient(c.State)
	require.NoError(t, err)
	defer cl.Close()
	ctx := context.Background()

	src := t.TempDir()
	specOf := func(quiet string) hostapi.Source { return wire(src, strings.Replace(noisySpec, "%s", quiet, 1)) }
	require.NoError(t, cl.Apply(ctx, hostapi.ApplyRequest{Source: specOf("60")}, nil))

	// The log fills the disk up to the reserve (1%: 20 KiB), and stops.
	logPath := filepath.Join(c.State, "logs", "noisy.log")
	inFile := logStopsAtReserve(t, c, logPath)

	// The plugin is not blocked: its output still flows, past what the
	// file holds.
	lastInFile := lastNumber(t, inFile)
	assert.Greater(t, lastNumber(t, followNoisy(t, cl)), lastInFile+1000, "lines still come")

	// An apply still records its spec, in the reserve.
	require.NoError(t, cl.Apply(ctx, hostapi.ApplyRequest{Source: specOf("61")}, nil))
	assert.Contains(t, keptSpec(t, c), "sleep, '61'")

	// Full to the last byte: an apply fails, naming the file, and the last
	// good spec is kept, whole, and keeps running.
	fill(t, filepath.Join(c.State, "filler"))
	err = cl.Apply(ctx, hostapi.ApplyRequest{Source: specOf("62")}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "record the applied spec: write "+filepath.Join(dir, statedir.Applied)+": no space left on device")
	kept := keptSpec(t, c)
	assert.Contains(t, kept, "sleep, '61'")
	good := spec.Source(specOf("61"))
	want, err := good.Spec()
	require.NoError(t, err)
	assertRunsBoth(t, cl, want.Digest(), "the host runs the last good spec")
	appliedBefore, err := os.Stat(filepath.Join(c.State, statedir.Applied))
	require.NoError(t, err)

	// A host started again on the full disk runs it again, writing none
	// of what it has.
	require.Equal(t, "closed", c.Say(t, "close"))
	require.Equal(t, "ready <nil>", c.Say(t, "open"), "%s", c.Log)
	assertRunsBoth(t, cl, want.Digest(), "the host started again runs the last good spec")
	appliedAfter, err := os.Stat(filepath.Join(c.State, statedir.Applied))
	require.NoError(t, err)
	assert.True(t, os.SameFile(appliedBefore, appliedAfter))
	assert.Equal(t, appliedBefore.ModTime(), appliedAfter.ModTime())
	assert.Equal(t, kept, keptSpec(t, c))

	// Its plugin's output flows, though none of it can be written.
	assert.Greater(t, lastNumber(t, followNoisy(t, cl)), 0)

	// Room again (the operator empties the log, and removes the filler):
	// the log says what it left out, and writes again.
	require.NoError(t, os.Truncate(logPath, 0))
	require.NoError(t, os.Remove(filepath.Join(c.State, "filler")))
	eventually(t, func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "[graft: room again on this disk: ")
	}, "the log resumes", c, logPath)
	require.Equal(t, "closed", c.Say(t, "close"))
}

// noisySpec is TestFullDisk's spec: noisy writes lines as fast as it can,
// and quiet sleeps for the seconds that replace %s.
const noisySpec = `name: shop
plugins:
  noisy: {command: [sh, -c, 'i=0; while :; do i=$((i+1)); echo "noisy line $i ................................................"; done']}
  quiet: {command: [sleep, '%s']}
`

// logStopsAtReserve waits until the log at logPath stops at the reserve
// (1%: 20 KiB) of c's file system, and checks that it stays stopped, with
// one notice, and leaves room for the state. It returns what the log holds.
func logStopsAtReserve(t *testing.T, c *testsupport.Child, logPath string) string {
	t.Helper()
	const notice = "[graft: less than 20.5 KiB free on this disk: output is not written to this file until there is room again]"
	eventually(t, func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), notice)
	}, "the log stops", c, logPath)
	time.Sleep(1500 * time.Millisecond) // more than a look at the free space
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(b), "[graft: "), "one notice")
	var fs unix.Statfs_t
	require.NoError(t, unix.Statfs(c.State, &fs))
	assert.GreaterOrEqual(t, int64(fs.Bavail)*fs.Bsize, int64(8<<10), "room is left for the state")
	return string(b)
}

// followNoisy returns what following noisy's log for half a second gives.
func followNoisy(t *testing.T, cl *hostapi.Client) string {
	t.Helper()
	var live strings.Builder
	follow, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	require.NoError(t, cl.Logs(follow, "noisy", 0, true, &live))
	return live.String()
}

// assertRunsBoth checks that the host runs noisy and quiet, of the spec
// whose digest is want.
func assertRunsBoth(t *testing.T, cl *hostapi.Client, want, msg string) {
	t.Helper()
	st, err := cl.Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, map[string]plan.Status{"noisy": plan.Running, "quiet": plan.Running}, statuses(st))
	assert.Equal(t, want, st.Host.Spec, msg)
}

// eventually waits up to 30 seconds for cond, and fails the test saying
// what it waited for, the free space, the end of the log and the host's own
// log.
func eventually(t *testing.T, cond func() bool, what string, c *testsupport.Child, logPath string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			var fs unix.Statfs_t
			unix.Statfs(c.State, &fs)
			b, _ := os.ReadFile(logPath)
			head, tail := b[:min(len(b), 300)], b[max(0, len(b)-300):]
			t.Fatalf("%s: not within 30s; %d bytes free; the log, of %d bytes, begins %q and ends %q; the host's log:\n%s",
				what, int64(fs.Bavail)*fs.Bsize, len(b), head, tail, c.Log)
		}
	}
}

// keptSpec is the YAML of the applied.json of c's state dir.
func keptSpec(t *testing.T, c *testsupport.Child) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.State, statedir.Applied))
	require.NoError(t, err)
	var a struct{ Source spec.Source }
	require.NoError(t, json.Unmarshal(b, &a), "applied.json is whole")
	return a.Source.YAML
}

var numberRE = regexp.MustCompile(`noisy line (\d+) `)

// lastNumber is the number of the last whole noisy line in s.
func lastNumber(t *testing.T, s string) int {
	t.Helper()
	all := numberRE.FindAllStringSubmatch(s, -1)
	require.NotEmpty(t, all, "no noisy line in %.200q", s)
	n, err := strconv.Atoi(all[len(all)-1][1])
	require.NoError(t, err)
	return n
}

// fill fills the file system of path to its last byte, with the file at
// path.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			require.True(t, errors.Is(err, syscall.ENOSPC), "%v", err)
			break
		}
	}
	for _, n := range []int{512, 64, 1} {
		for {
			if _, err := f.Write(chunk[:n]); err != nil {
				break
			}
		}
	}
}
