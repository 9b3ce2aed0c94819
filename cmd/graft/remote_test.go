//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/faultproxy"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
)

// These tests run a real `graft runner` and a real `graft host` as
// processes, and break what lies between them: the host frozen past its
// lease, the network gone dark.
const (
	rLease = 1500 * time.Millisecond
	rGrace = 300 * time.Millisecond
)

type remoteRig struct {
	t      *testing.T
	dir    string
	run    string // GRAFT_TEST_RUN: marks every process of the test
	runner *exec.Cmd
	exited chan struct{}
	addr   string // where the runner listens, host:port
}

// newRemoteRig starts a runner on a loopback port; the test's end stops
// it, the host, and anything left.
func newRemoteRig(t *testing.T) *remoteRig {
	dir := t.TempDir()
	rig := &remoteRig{t: t, dir: dir, run: dir, addr: testsupport.FreeAddr(t)}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte("rig-token\n"), 0o600))
	rig.runner = exec.Command("graft", "runner", "--listen", "tcp://"+rig.addr, "--token-file", filepath.Join(dir, "token"), "--state-dir", filepath.Join(dir, "rstate"),
		"--lease", fmt.Sprintf("%d millis", rLease.Milliseconds()), "--grace", fmt.Sprintf("%d millis", rGrace.Milliseconds()))
	rig.runner.Env = rig.env()
	logf, err := os.Create(filepath.Join(dir, "runner.log"))
	require.NoError(t, err)
	defer logf.Close()
	rig.runner.Stdout, rig.runner.Stderr = logf, logf
	require.NoError(t, rig.runner.Start())
	rig.exited = make(chan struct{})
	go func() {
		rig.runner.Wait()
		close(rig.exited)
	}()
	t.Cleanup(rig.stop)
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.Dial("tcp", rig.addr)
		if err == nil {
			c.Close()
			break
		}
		require.True(t, time.Now().Before(deadline), "the runner does not listen")
		time.Sleep(20 * time.Millisecond)
	}
	return rig
}

func (rig *remoteRig) env() []string {
	return append(os.Environ(), "GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN="+rig.run, "NO_COLOR=1")
}

// graft runs a graft command in the rig's directory.
func (rig *remoteRig) graft(args ...string) (string, error) {
	cmd := exec.Command("graft", args...)
	cmd.Dir, cmd.Env = rig.dir, rig.env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (rig *remoteRig) stop() {
	rig.graft("down")
	if pid := hostPID(filepath.Join(rig.dir, ".graft")); pid > 0 {
		syscall.Kill(pid, syscall.SIGCONT)
		syscall.Kill(pid, syscall.SIGKILL)
		testsupport.WaitGone(rig.t, 10*time.Second, pid)
	}
	rig.runner.Process.Signal(syscall.SIGTERM)
	select {
	case <-rig.exited:
	case <-time.After(20 * time.Second):
		rig.runner.Process.Kill()
		<-rig.exited
		rig.t.Error("the runner ignored SIGTERM")
	}
	for _, pid := range marked(rig.run) {
		rig.t.Errorf("process %d left behind", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if rig.t.Failed() {
		b, _ := os.ReadFile(filepath.Join(rig.dir, "runner.log"))
		rig.t.Logf("--- runner ---\n%s", b)
		b, _ = os.ReadFile(filepath.Join(rig.dir, ".graft", hostapi.HostLog))
		rig.t.Logf("--- host ---\n%s", b)
	}
}

// spec writes plugins.yaml: api on the runner at addr.
func (rig *remoteRig) spec(addr string) {
	yaml := fmt.Sprintf(`name: shop
runners:
  box: {address: "tcp://%s", tokenFile: token, connect: {margin: 1 seconds}}
plugins:
  api:
    run: runner
    runner: box
    command: [plug, serve, api]
    retry: {delay: 500 millis, max: 1 seconds}
`, addr)
	require.NoError(rig.t, os.WriteFile(filepath.Join(rig.dir, "plugins.yaml"), []byte(yaml), 0o644))
}

func (rig *remoteRig) api() (hostapi.PluginStatus, error) {
	c, err := hostapi.NewClient(filepath.Join(rig.dir, ".graft"))
	if err != nil {
		return hostapi.PluginStatus{}, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		return hostapi.PluginStatus{}, err
	}
	for _, r := range st.Plugins {
		if r.Name == "api" {
			return r, nil
		}
	}
	return hostapi.PluginStatus{}, fmt.Errorf("no api")
}

// TestHostFrozenPastLease freezes the host (SIGSTOP): its renewals stop,
// and the runner stops the plugin when the lease runs out, interrupt then
// kill after grace; not before.
func TestHostFrozenPastLease(t *testing.T) {
	rig := newRemoteRig(t)
	rig.spec(rig.addr)
	out, err := rig.graft("apply")
	require.NoError(t, err, out)
	r, err := rig.api()
	require.NoError(t, err)
	require.Equal(t, string(plan.Running), r.Status)
	require.NotZero(t, r.PID)

	hostPid := hostPID(filepath.Join(rig.dir, ".graft"))
	require.NotZero(t, hostPid)
	require.NoError(t, syscall.Kill(hostPid, syscall.SIGSTOP))
	frozen := time.Now()
	took := testsupport.WaitGone(t, rLease+rGrace+10*time.Second, r.PID).Sub(frozen)
	t.Logf("the runner stopped the plugin %s after the host froze (lease %s, grace %s)", took, rLease, rGrace)
	// The last renewal came at most a third of the lease before the
	// freeze.
	assert.Greater(t, took, rLease*2/3, "stopped before the lease ran out")
	assert.Less(t, took, rLease+rGrace+2*time.Second)
	require.NoError(t, syscall.Kill(hostPid, syscall.SIGCONT))

	// Thawed, the host finds its session gone: the plugin is unconfirmed
	// (the host cannot know it was stopped), and its retry starts it again
	// with the next generation once the runner confirmed the old one gone.
	require.Eventually(t, func() bool {
		r, err := rig.api()
		return err == nil && r.Status == string(plan.Running) && r.Generation == 2
	}, 15*time.Second, 50*time.Millisecond)
	b, _ := os.ReadFile(filepath.Join(rig.dir, "runner.log"))
	assert.Contains(t, string(b), "lease ran out")
}

// TestNetworkDark cuts the network between host and runner (a proxy that
// drops everything, closing nothing): the plugin is unconfirmed with a
// RemoteError (it may still run: never reported stopped without the
// runner's word), the runner stops it at the lease's end, and once the
// network is back the retry replaces it with a larger generation.
func TestNetworkDark(t *testing.T) {
	rig := newRemoteRig(t)
	px := faultproxy.New(t, rig.addr)
	rig.spec(px.Addr())
	out, err := rig.graft("apply")
	require.NoError(t, err, out)
	r, err := rig.api()
	require.NoError(t, err)
	pid := r.PID

	px.Dark()
	require.Eventually(t, func() bool {
		r, err := rig.api()
		return err == nil && r.Status == string(plan.Unconfirmed) && strings.Contains(r.LastError, "RemoteError")
	}, rLease+10*time.Second, 50*time.Millisecond)
	r, _ = rig.api()
	t.Logf("unconfirmed: %s", r.LastError)
	testsupport.WaitGone(t, rLease+rGrace+10*time.Second, pid)

	px.Light()
	require.Eventually(t, func() bool {
		r, err := rig.api()
		return err == nil && r.Status == string(plan.Running) && r.Generation == 2
	}, 20*time.Second, 50*time.Millisecond)

	// A replacement whose stop the runner cannot answer: the stop is
	// unconfirmed, nothing starts, and the plugin shows "unconfirmed".
	px.Dark()
	f, err := os.OpenFile(filepath.Join(rig.dir, "plugins.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("    env: {V: \"2\"}\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	out, err = rig.graft("apply")
	require.Error(t, err)
	assert.Contains(t, out, "RemoteTerminationUnconfirmed")
	r, err = rig.api()
	require.NoError(t, err)
	assert.Equal(t, string(plan.Unconfirmed), r.Status)
	assert.Equal(t, int64(2), r.Generation)

	// Back on the network, the next apply asks again: the runner, which
	// stopped generation 2 when its lease ran out, confirms it, and the
	// replacement starts.
	px.Light()
	out, err = rig.graft("apply")
	require.NoError(t, err, out)
	r, err = rig.api()
	require.NoError(t, err)
	assert.Equal(t, string(plan.Running), r.Status)
	assert.Equal(t, int64(3), r.Generation)

	// A down whose stop the runner cannot answer fails, and the host
	// ends all the same, as asked: the runner stops what it ran once the
	// host's lease runs out.
	px.Dark()
	out, err = rig.graft("down")
	assert.Error(t, err)
	assert.Contains(t, out, "RemoteTerminationUnconfirmed")
	testsupport.WaitGone(t, rLease+rGrace+10*time.Second, r.PID)
	px.Light()
}
