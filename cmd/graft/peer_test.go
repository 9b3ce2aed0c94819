//go:build linux

package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/asnobody"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/runnerapi"
)

// nobodysRunner runs graft runner as nobody (a copy of this test binary
// named graft, in dir, which nobody owns), on a unix socket at sock with
// its state in state, until the test ends.
func nobodysRunner(t *testing.T, dir, sock, state string) {
	t.Helper()
	prog := asnobody.Program(t, dir, "graft")
	cmd := asnobody.Command(prog, "runner", "--listen", "unix://"+sock, "--state-dir", state)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	logf, err := os.Create(filepath.Join(t.TempDir(), "runner.log"))
	require.NoError(t, err)
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Error("nobody's runner ignored SIGTERM")
		}
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("--- nobody's runner ---\n%s", b)
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("nobody's runner exited:\n%s", b)
		case <-time.After(20 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "nobody's runner does not listen")
	}
}

// runnerStatus asks the runner at sock for its status, without checking
// who it is (what graft never does).
func runnerStatus(t *testing.T, sock string) runnerapi.Status {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://runner/v1/status")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st runnerapi.Status
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st
}

// graftAs runs graft (as this user) in dir with env added, and returns
// its combined output.
func graftAs(t *testing.T, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("graft", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1", "GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN="+dir), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestRunnerOfAnotherUserRefused: a plugins file names a runner on a unix
// socket where another user's runner listens (graft runner, run as
// nobody): the host's client refuses it before it sends anything, naming
// the socket and the uid, and that runner never hears of the plugin.
func TestRunnerOfAnotherUserRefused(t *testing.T) {
	uid := asnobody.Need(t)
	theirs := asnobody.Dir(t)
	sock := filepath.Join(theirs, "runner.sock")
	nobodysRunner(t, theirs, sock, filepath.Join(theirs, "state"))

	dir := t.TempDir()
	t.Cleanup(func() { graftAs(t, dir, nil, "down") })
	yaml := fmt.Sprintf("name: shop\nrunners:\n  box: {address: \"unix://%s\"}\nplugins:\n  api: {run: runner, runner: box, command: [plug, serve, api], env: {SECRET: hunter2}}\n", sock)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(yaml), 0o600))
	out, err := graftAs(t, dir, nil, "apply")
	require.Error(t, err, out)
	assert.Contains(t, out, "✗ start api")
	assert.Contains(t, out, fmt.Sprintf("%s: the process listening there runs as uid %d, not as this user (uid 0): graft sent it nothing", sock, uid))

	st := runnerStatus(t, sock)
	assert.Empty(t, st.Sessions, "no session was opened with it")
	assert.Empty(t, st.Instances)
}

// TestSocketDirOfAnotherUserIgnored: a state dir too deep for its socket
// once had it in graft-<uid> in the temporary directory. Another user
// (graft runner, run as nobody) makes that directory first and listens
// at the exact socket path the host would have had there: graft starts
// its host all the same, in a directory made for it, and talks to no
// one else; graft down removes that directory. Then the state dir's
// socket link is made to name the stranger's socket, as a link left by
// a host that died would once its directory was removed and made again
// by someone else: graft does not follow it, says no host runs, and
// starts one.
func TestSocketDirOfAnotherUserIgnored(t *testing.T) {
	uid := asnobody.Need(t)
	theirs := asnobody.Dir(t)
	tmp := filepath.Join(theirs, "tmp") // a shared temporary directory, as /tmp
	require.NoError(t, os.Mkdir(tmp, 0o755))
	require.NoError(t, os.Chmod(tmp, 0o1777))

	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte("name: shop\nplugins:\n  api: {command: [plug, serve, api], env: {SECRET: hunter2}}\n"), 0o600))
	state := filepath.Join(dir, ".graft")
	// Where the socket went, named as graft named it there.
	sum := sha256.Sum256([]byte(state))
	squat := filepath.Join(tmp, "graft-0")
	sock := filepath.Join(squat, hex.EncodeToString(sum[:8])+".sock")
	nobodysRunner(t, theirs, sock, squat) // its state dir is the socket directory: it makes it

	env := []string{"TMPDIR=" + tmp, "XDG_RUNTIME_DIR="}
	t.Cleanup(func() {
		graftAs(t, dir, env, "down")
		if pid := hostPID(state); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	out, err := graftAs(t, dir, env, "apply")
	require.NoError(t, err, out)
	require.NotZero(t, hostPID(state), "a host runs")
	link, err := os.ReadFile(filepath.Join(state, "host.sock.path"))
	require.NoError(t, err)
	mine := filepath.Dir(strings.TrimSpace(string(link)))
	assert.Equal(t, tmp, filepath.Dir(mine))
	assert.NotEqual(t, squat, mine)
	out, err = graftAs(t, dir, env, "status")
	require.NoError(t, err, out)
	assert.Contains(t, out, "api")
	out, err = graftAs(t, dir, env, "down")
	require.NoError(t, err, out)
	assert.NoDirExists(t, mine, "graft down removes the host's socket directory")

	require.NoError(t, os.WriteFile(filepath.Join(state, "host.sock.path"), []byte(sock+"\n"), 0o600))
	out, _ = graftAs(t, dir, env, "status")
	assert.Contains(t, out, "No host is running", out)
	out, err = graftAs(t, dir, env, "apply")
	require.NoError(t, err, out)
	require.NotZero(t, hostPID(state), "a host runs")

	st := runnerStatus(t, sock)
	assert.Empty(t, st.Sessions, "the stranger heard nothing")
	assert.Equal(t, strconv.Itoa(uid), procUID(t, st.PID), "the stranger is nobody")
}

// procUID is the real uid of process pid.
func procUID(t *testing.T, pid int) string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			return strings.Fields(rest)[0]
		}
	}
	t.Fatalf("no Uid in /proc/%d/status", pid)
	return ""
}

// TestAnotherUserGetsNoWayIn: another local user (nobody, running graft)
// reaches a host neither through its TCP listener, loopback though it is,
// without the token, nor through its unix socket: nothing of what it asks
// happens, and the plugin runs on.
func TestAnotherUserGetsNoWayIn(t *testing.T) {
	asnobody.Need(t)
	theirs := asnobody.Dir(t)
	prog := asnobody.Program(t, theirs, "graft")
	wrong := filepath.Join(theirs, "token")
	require.NoError(t, os.WriteFile(wrong, []byte("guessed\n"), 0o644))

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte("name: shop\nplugins:\n  api: {command: [plug, serve, api]}\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte("s3cret\n"), 0o600))
	addr := testsupport.FreeAddr(t)
	hostCmd := exec.Command("graft", "host", "--listen", "tcp://"+addr, "--token-file", filepath.Join(dir, "token"))
	hostCmd.Dir = dir
	hostCmd.Env = append(os.Environ(), "NO_COLOR=1", "GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN="+dir)
	require.NoError(t, hostCmd.Start())
	exited := make(chan struct{})
	go func() { hostCmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		hostCmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			hostCmd.Process.Kill()
			<-exited
		}
	})
	state := filepath.Join(dir, ".graft")
	waitUntil(t, 15*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "the host listens on TCP")
	out, err := graftAs(t, dir, nil, "apply")
	require.NoError(t, err, out)

	for _, args := range [][]string{
		{"--host", "tcp://" + addr, "--token-file", wrong, "down"},
		{"--state-dir", state, "down"},
		{"--state-dir", state, "status"},
	} {
		cmd := asnobody.Command(prog, args...)
		cmd.Dir = theirs
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "GORACE=atexit_sleep_ms=0")
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "graft %v as nobody: %s", args, out)
		t.Logf("graft %v as nobody: %s", args, strings.TrimSpace(string(out)))
		if args[0] == "--host" {
			assert.Contains(t, string(out), "bad or missing token")
		} else {
			assert.Contains(t, string(out), "permission denied")
		}
	}
	c, err := hostapi.NewClient(state)
	require.NoError(t, err)
	defer c.Close()
	st, err := c.Status(context.Background())
	require.NoError(t, err)
	require.Len(t, st.Plugins, 1)
	assert.Equal(t, "running", string(st.Plugins[0].Status), "nothing nobody asked for happened")
	out, err = graftAs(t, dir, nil, "down")
	require.NoError(t, err, out)
}

// TestUnreadableLeaseIsReported: a host run as nobody shares an election
// directory with a lease it may not read (another user's, mode 0000). It
// does not take the lease, though its leader has long stopped renewing
// it: graft status and graft leader name the file and the cause. Once
// the mode is fixed, the host reads it at its next poll and, the leader
// being dead, leads with the next epoch.
func TestUnreadableLeaseIsReported(t *testing.T) {
	asnobody.Need(t)
	theirs := asnobody.Dir(t)
	prog := asnobody.Program(t, theirs, "graft")
	shared := filepath.Join(theirs, "shared")
	require.NoError(t, os.Mkdir(shared, 0o755))
	require.NoError(t, os.Chown(shared, os.Getuid(), -1)) // root's, and writable by every user: the hosts' users differ
	require.NoError(t, os.Chmod(shared, 0o777))
	lease := filepath.Join(shared, "shop.relay.lease.json")
	// Its leader answers nowhere: once readable, the lease is taken at once.
	const l = `{"holder":"elsewhere","address":"127.0.0.1:1","epoch":5,"renewCount":3}` + "\n"
	require.NoError(t, os.WriteFile(lease, []byte(l), 0o600))
	require.NoError(t, os.Chmod(lease, 0))
	// The shortest ttl the loader takes with renew 0.5 s (2 × renew + the
	// 7-second stop).
	yaml := "name: shop\nplugins:\n  relay:\n    run: floating\n    command: [sleep, \"3600\"]\n" +
		"    elect: {dir: shared, address: \"127.0.0.1:9\", ttl: 9 seconds, renew: 500 millis, poll: 200 millis}\n"
	require.NoError(t, os.WriteFile(filepath.Join(theirs, "plugins.yaml"), []byte(yaml), 0o644))
	graft := func(args ...string) (string, error) {
		cmd := asnobody.Command(prog, args...)
		cmd.Dir = theirs
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN="+theirs)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		graft("down")
		cleanup(theirs)
	})

	// The start waits ttl + poll for a leader, then keeps the plugin
	// waiting for a lease it can read.
	out, err := graft("apply")
	require.NoError(t, err, out)
	want := "lease " + lease + ": permission denied"
	out, err = graft("status", "--json")
	require.NoError(t, err, out)
	var st hostapi.Status
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Len(t, st.Plugins, 1)
	p := st.Plugins[0]
	assert.Equal(t, "candidate", p.Role)
	assert.Equal(t, "starting", p.Status)
	assert.Contains(t, p.LastError, want)
	out, err = graft("status")
	require.NoError(t, err, out)
	// The table's cell is cut at 80 runes: this temp path leaves room for
	// the file only; --json above has the cause.
	assert.Contains(t, out, "lease "+lease+": ", "the table's cell shows the file")
	out, err = graft("leader", "relay")
	require.Error(t, err, out)
	assert.Contains(t, out, want)
	assert.Contains(t, out, "chmod 644 "+lease)

	require.NoError(t, os.Chmod(lease, 0), "still unreadable")
	data, err := os.ReadFile(lease)
	require.NoError(t, err)
	assert.Equal(t, l, string(data), "not taken over, though frozen for longer than ttl")

	require.NoError(t, os.Chmod(lease, 0o644))
	waitUntil(t, 15*time.Second, func() bool {
		out, err := graft("leader", "relay")
		return err == nil && strings.Contains(out, "Epoch:     6\n") && strings.Contains(out, ", leader\n")
	}, "nobody's host leads once the lease is readable, with the next epoch")
	out, err = graft("status")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "permission denied")
	out, err = graft("down")
	require.NoError(t, err, out)
}
