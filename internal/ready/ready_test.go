package ready

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/launch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readyOf is r with a timeout of 5 seconds when it has none.
func readyOf(r launch.Ready) *launch.Ready {
	if r.Timeout == 0 {
		r.Timeout = launch.Duration(5 * time.Second)
	}
	return &r
}

func noExec(context.Context, []string) error { return errors.New("no exec here") }

func TestTCP(t *testing.T) {
	addr := testsupport.FreeAddr(t)
	ln := make(chan net.Listener, 1)
	go func() {
		time.Sleep(150 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err == nil {
			ln <- l
		}
		close(ln)
	}()
	began := time.Now()
	err := Wait(context.Background(), readyOf(launch.Ready{Probe: launch.Probe{TCP: addr}}), noExec, nil, nil)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(began), 150*time.Millisecond)
	if l := <-ln; l != nil {
		l.Close()
	}
}

func TestNotReady(t *testing.T) {
	addr := testsupport.FreeAddr(t)
	began := time.Now()
	err := Wait(context.Background(), readyOf(launch.Ready{Probe: launch.Probe{TCP: addr}, Timeout: launch.Duration(300 * time.Millisecond)}), noExec, nil, nil)
	var nr *NotReadyError
	require.ErrorAs(t, err, &nr)
	assert.Contains(t, err.Error(), "not ready after 300 millis: dial tcp "+addr)
	took := time.Since(began)
	assert.GreaterOrEqual(t, took, 300*time.Millisecond)
	assert.Less(t, took, 2*time.Second)
}

func TestHTTP(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/flaky":
			if calls.Add(1) < 3 {
				http.Error(w, "warming up", http.StatusServiceUnavailable)
				return
			}
		case "/moved":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		case "/broken":
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	require.NoError(t, Wait(context.Background(), readyOf(launch.Ready{Probe: launch.Probe{HTTP: srv.URL + "/flaky"}}), noExec, nil, nil))
	assert.Equal(t, int32(3), calls.Load(), "tried until it answered 200")
	require.NoError(t, Wait(context.Background(), readyOf(launch.Ready{Probe: launch.Probe{HTTP: srv.URL + "/moved"}}), noExec, nil, nil), "a redirect is an answer")
	err := Wait(context.Background(), readyOf(launch.Ready{Probe: launch.Probe{HTTP: srv.URL + "/broken"}, Timeout: launch.Duration(200 * time.Millisecond)}), noExec, nil, nil)
	assert.ErrorContains(t, err, "500 Internal Server Error")
}

func TestExec(t *testing.T) {
	n := 0
	exec := func(ctx context.Context, argv []string) error {
		assert.Equal(t, []string{"pg_isready", "-q"}, argv)
		if n++; n < 2 {
			return errors.New("exit status 2")
		}
		return nil
	}
	require.NoError(t, Wait(context.Background(), readyOf(launch.Ready{Probe: launch.Probe{Exec: []string{"pg_isready", "-q"}}}), exec, nil, nil))
	assert.Equal(t, 2, n)
}

func TestGone(t *testing.T) {
	gone := make(chan struct{})
	time.AfterFunc(100*time.Millisecond, func() { close(gone) })
	err := Wait(context.Background(), readyOf(launch.Ready{Probe: launch.Probe{TCP: testsupport.FreeAddr(t)}}), noExec, gone, nil)
	assert.ErrorIs(t, err, ErrGone)
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := Wait(ctx, readyOf(launch.Ready{Probe: launch.Probe{TCP: testsupport.FreeAddr(t)}}), noExec, nil, nil)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	var nr *NotReadyError
	assert.False(t, errors.As(err, &nr), "the caller's deadline is not the check's timeout")
}

// memOut is an Output that keeps what it is written.
type memOut struct{ b strings.Builder }

func (m *memOut) Write(p []byte) (int, error) { return m.b.Write(p) }
func (m *memOut) Tail() []string              { return strings.Split(m.b.String(), "\n") }

// TestLogReady: a log pattern is seen at the first matching line,
// however the output is cut into writes, and passed on whole; a check
// composes with it, and the timeout covers both.
func TestLogReady(t *testing.T) {
	r := readyOf(launch.Ready{Log: `^listening on :\d+$`})
	mem := &memOut{}
	out, seen := Watch(r, mem)
	for _, part := range []string{"starting\nlisten", "ing on :80", "80\r\nmore\n"} {
		_, err := out.Write([]byte(part))
		require.NoError(t, err)
	}
	assert.Equal(t, "starting\nlistening on :8080\r\nmore\n", mem.b.String())
	require.NoError(t, Wait(context.Background(), r, noExec, nil, seen))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	both := readyOf(launch.Ready{Log: "up", Probe: launch.Probe{TCP: ln.Addr().String()}, Timeout: launch.Duration(300 * time.Millisecond)})
	_, seen = Watch(both, &memOut{})
	err = Wait(context.Background(), both, noExec, nil, seen)
	var nr *NotReadyError
	require.ErrorAs(t, err, &nr, "the line never came, though the port answers")
	assert.Equal(t, `not ready after 300 millis: no line of its output matched "up"`, err.Error())

	out, seen = Watch(both, &memOut{})
	go out.Write([]byte("up\n"))
	assert.NoError(t, Wait(context.Background(), both, noExec, nil, seen))
	assert.Nil(t, func() <-chan struct{} {
		_, s := Watch(readyOf(launch.Ready{Probe: launch.Probe{TCP: "x:1"}}), mem)
		return s
	}(), "no pattern, no watch")
}
