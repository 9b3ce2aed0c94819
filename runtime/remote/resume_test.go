//go:build linux

package remote

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
)

// crash makes r drop its session as a host killed outright does: its
// renewals and its event stream end, and nothing is said to the runner.
func crash(r *Remote) string {
	r.mu.Lock()
	s := r.sess
	r.sess, r.closed = nil, true
	r.mu.Unlock()
	s.cancel(errors.New("the host was killed"))
	s.wg.Wait()
	r.c.close()
	return s.id
}

// TestResume: a second Remote resumes the session the first held, and
// adopts its process: the same generation and pid, renewed past its lease,
// its output and its stop through the new event stream.
func TestResume(t *testing.T) {
	addr := testRunner(t)
	a := newRemote(t, addr, nil)
	var recorded []string
	a.cfg.OnSession = func(id string) { recorded = append(recorded, id) }
	req := runtime.Request{Project: "shop", Output: runtimetest.NewRecorder()}.For(helper("api", "cooperative"))
	h, err := a.Start(context.Background(), req)
	require.NoError(t, err)
	id := crash(a)
	require.Equal(t, []string{id}, recorded, "the session's id is told once it is held")

	b := newRemote(t, addr, nil)
	defer b.Close()
	got, err := b.Resume(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, Resumed{Instance: "shop.api", Generation: h.Identity().Generation, PID: h.PID(), StartedAt: got[0].StartedAt}, got[0])
	assert.Equal(t, id, b.SessionID())
	_, err = b.Resume(context.Background(), id)
	assert.ErrorIs(t, err, ErrSessionOpen)

	out := runtimetest.NewRecorder()
	req.Output = out
	adopted, err := b.Adopt(req, got[0])
	require.NoError(t, err)
	assert.Equal(t, h.Identity(), adopted.Identity())
	time.Sleep(2 * lease) // renewed: it runs on
	select {
	case <-adopted.Done():
		t.Fatalf("the adopted process ended: %+v", adopted.Exit())
	default:
	}
	outcome, err := adopted.Stop(context.Background())
	require.NoError(t, err)
	assert.Equal(t, runtime.Exited, outcome)
	assert.True(t, out.WaitFor("bye", 10*time.Second), "its output comes through the resumed session")

	h2, err := b.Start(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, h.Identity().Generation+1, h2.Identity().Generation, "the runner's generations go on")
}

// TestResumeGone: a session the runner does not have, or whose lease ran
// out, is none to resume: no error, nothing running, and the next start
// opens another session, whose generation is the next.
func TestResumeGone(t *testing.T) {
	addr := testRunner(t)
	b := newRemote(t, addr, nil)
	defer b.Close()
	got, err := b.Resume(context.Background(), "no-such-session")
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Empty(t, b.SessionID())

	a := newRemote(t, addr, nil)
	req := runtime.Request{Project: "shop", Output: runtimetest.NewRecorder()}.For(helper("api", "cooperative"))
	h, err := a.Start(context.Background(), req)
	require.NoError(t, err)
	id := crash(a)
	time.Sleep(lease + 2*grace + 300*time.Millisecond) // the lease runs out; the runner stops it
	got, err = b.Resume(context.Background(), id)
	require.NoError(t, err)
	assert.Empty(t, got)
	h2, err := b.Start(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, h.Identity().Generation+1, h2.Identity().Generation)
}

// TestResumeUnreachable: a runner that cannot be reached fails the
// resumption with a *RemoteError.
func TestResumeUnreachable(t *testing.T) {
	b := newRemote(t, "tcp://127.0.0.1:1", nil)
	defer b.Close()
	_, err := b.Resume(context.Background(), "some-session")
	var remote *RemoteError
	require.ErrorAs(t, err, &remote)
}
