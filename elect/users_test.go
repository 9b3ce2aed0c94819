//go:build linux

package elect

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/asnobody"
)

// otherHost is a host run by another user (nobody, for real): this test
// binary in campaignMain's role.
type otherHost struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // what it says; closed when it exits
}

// startAsNobody runs a host with id id as nobody in dir, a directory made by
// asnobody.Dir. It ends with the test.
func startAsNobody(t *testing.T, dir, id string) *otherHost {
	t.Helper()
	prog := asnobody.Program(t, dir, "elect.test")
	cmd := asnobody.Command(prog, dir, id)
	cmd.Env = append(os.Environ(), roleEnv+"=campaign")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	h := &otherHost{cmd: cmd, stdin: stdin, lines: make(chan string, 100)}
	go func() {
		defer close(h.lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			h.lines <- s.Text()
		}
	}()
	t.Cleanup(h.stop)
	return h
}

// stop closes its stdin, so that it resigns and exits, and waits for it.
func (h *otherHost) stop() {
	h.stdin.Close()
	done := make(chan struct{})
	go func() {
		for range h.lines {
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		h.cmd.Process.Kill()
		<-done
	}
	h.cmd.Wait()
}

// expect waits for a line starting with prefix, failing on any line that
// starts with one of refused, and returns it.
func (h *otherHost) expect(t *testing.T, prefix string, refused ...string) string {
	t.Helper()
	limit := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-h.lines:
			require.True(t, ok, "the other host exited before %q", prefix)
			for _, r := range refused {
				require.False(t, strings.HasPrefix(l, r), "the other host said %q", l)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-limit:
			t.Fatalf("the other host never said %q", prefix)
		}
	}
}

// quiet fails if the other host says a line starting with one of refused
// within d.
func (h *otherHost) quiet(t *testing.T, d time.Duration, refused ...string) {
	t.Helper()
	limit := time.After(d)
	for {
		select {
		case l, ok := <-h.lines:
			require.True(t, ok, "the other host exited")
			for _, r := range refused {
				require.False(t, strings.HasPrefix(l, r), "the other host said %q", l)
			}
		case <-limit:
			return
		}
	}
}

// TestTwoUsersOneDirectory: two hosts that share a directory as two users
// (root and nobody, as machines mapped to different uids on a network
// share) read each other's lease. One leads at a time, each term with its
// own epoch: nobody follows root's epoch 1, and takes epoch 2 only when
// root resigns; the files the hosts write are mode 0644.
func TestTwoUsersOneDirectory(t *testing.T) {
	asnobody.Need(t)
	dir := asnobody.Dir(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // root's plugin answers
	require.NoError(t, err)
	defer ln.Close()
	e, err := New(Config{Dir: dir, Instance: instance, HostID: "root", Address: ln.Addr().String(),
		TTL: usersTTL, Renew: usersRenew, Poll: usersPoll})
	require.NoError(t, err)
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mine := recv(t, campaign(ctx, e))
	require.NoError(t, mine.err)
	require.Equal(t, int64(1), mine.term.Epoch())
	leasePath := filepath.Join(dir, instance+".lease.json")
	fi, err := os.Stat(leasePath)
	require.NoError(t, err)
	assert.Equal(t, FileMode, fi.Mode().Perm(), "root's lease")

	other := startAsNobody(t, dir, "nobody")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("root's term: lost: %v", mine.term.Err())
		}
	})
	assert.Equal(t, "obs root 1 false", other.expect(t, "obs ", "won", "problem"), "nobody reads root's lease")
	// Past a ttl and a half of root's renewals: nobody follows, and takes nothing.
	other.quiet(t, 3*usersTTL/2, "won", "problem", "obs")
	select {
	case <-mine.term.Lost():
		t.Fatalf("root lost its term: %v", mine.term.Err())
	default:
	}

	w := observe(ctx, e)
	require.NoError(t, mine.term.Resign(ctx))
	assert.Equal(t, "won 2", other.expect(t, "won", "problem"), "nobody leads once root resigned, with the next epoch")
	w.waitFor(t, func(o Observation) bool { return o.Lease.Holder == "nobody" && o.Lease.Epoch == 2 && !o.Dead })
	fi, err = os.Stat(leasePath)
	require.NoError(t, err)
	assert.Equal(t, FileMode, fi.Mode().Perm(), "nobody's lease")
	// Root campaigns again, and follows nobody: no second leader.
	again := campaign(ctx, e)
	other.quiet(t, 3*usersTTL/2, "won", "problem")
	assert.True(t, pending(again), "root does not lead beside nobody")
	cancel()
	r := recv(t, again)
	require.Error(t, r.err)
	recv(t, w.done)
}

// TestUnreadableLeaseIsNotTaken: a lease that another user's host wrote
// with a mode that shuts this host out (0000 here) is neither absent nor
// free. The host (nobody) does not contend for as long as it cannot read
// it, though the lease is frozen, and reports the file and the cause
// (Problem, Leader); once the mode is fixed, it reads the lease again at
// its next poll and, the leader being dead, takes the next epoch.
func TestUnreadableLeaseIsNotTaken(t *testing.T) {
	asnobody.Need(t)
	dir := asnobody.Dir(t)
	leasePath := filepath.Join(dir, instance+".lease.json")
	// A leader whose address does not answer: once readable, the lease is
	// taken at once.
	l := `{"holder":"root","address":"127.0.0.1:1","epoch":5,"renewCount":3}` + "\n"
	require.NoError(t, os.WriteFile(leasePath, []byte(l), 0o600))
	require.NoError(t, os.Chmod(leasePath, 0))

	other := startAsNobody(t, dir, "nobody")
	p := other.expect(t, "problem ", "won")
	assert.Contains(t, p, "lease "+leasePath+": permission denied: it exists, but this host may not read it")
	le := other.expect(t, "leader-err ", "won")
	assert.Contains(t, le, leasePath)
	assert.Contains(t, le, "permission denied")
	// Frozen for more than ttl: were it free, it would be taken by now.
	other.quiet(t, 2*usersTTL, "won", "obs")
	data, err := os.ReadFile(leasePath)
	require.NoError(t, err)
	assert.Equal(t, l, string(data), "the lease is left alone")
	assert.NoFileExists(t, filepath.Join(dir, instance+".lock"), "nor contended for")

	require.NoError(t, os.Chmod(leasePath, 0o644))
	assert.Equal(t, "won 6", other.expect(t, "won", "problem"), "readable again: taken, with the next epoch")
}
