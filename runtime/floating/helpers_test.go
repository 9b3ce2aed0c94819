//go:build linux

package floating

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/local"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// The plugins of these tests are this test binary run again as a local
// process; helperEnv names what it does.
const helperEnv = "GRAFT_TEST_FLOATING_HELPER"

func TestMain(m *testing.M) {
	testsupport.PlayRole(helperEnv, runtimetest.Play, helperMain)
	runtimetest.Main(m)
}

// held keeps the exclusive role's lock file open (and so locked) for
// the life of the process.
var held *os.File

// helperMain acts as the plugin of one of this package's roles, those
// beyond runtimetest.Play's, or returns false:
//
//	serve ADDR           answers HTTP GET with 200 on ADDR, and is cooperative.
//	                     Only a process that runs answers HTTP: the kernel
//	                     accepts TCP connections for a stopped one.
//	exclusive LOCK ADDR  takes an exclusive flock on LOCK, then plays listen 0s
//	                     ADDR. Should another process hold it, it appends why
//	                     to LOCK.overlap first: two leaders' plugins ran at once.
//	                     The kernel drops the lock as the holder exits, however
//	                     it is killed, so the check needs no clock.
func helperMain(role string, args []string) bool {
	switch role {
	case "exclusive":
		f, err := os.OpenFile(args[0], os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "lock: %v\n", err)
			os.Exit(3)
		}
		held = f
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			o, oerr := os.OpenFile(args[0]+".overlap", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if oerr != nil {
				fmt.Fprintf(os.Stderr, "record the overlap: %v\n", oerr)
				os.Exit(3)
			}
			fmt.Fprintf(o, "pid %d (generation %s) started while another plugin held the lock: %v\n", os.Getpid(), os.Getenv("GRAFT_GENERATION"), err)
			o.Close()
		}
		runtimetest.Play("listen", []string{"0s", args[1]})
	case "serve":
		l, err := net.Listen("tcp", args[0])
		if err != nil {
			fmt.Fprintf(os.Stderr, "listen: %v\n", err)
			os.Exit(3)
		}
		go http.Serve(l, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		runtimetest.Play("cooperative", nil)
	}
	return false
}

// The elections' durations in these tests: short, and in the proportions
// of the defaults; a start waits ttl + poll for a leader, longer than a
// stale lock and the herd backoff (at most 0.9 s) keep everyone out.
const (
	ttl       = 2 * time.Second
	renew     = 400 * time.Millisecond
	poll      = 250 * time.Millisecond
	lockStale = time.Second
	// slack covers the herd backoff, starting a process and a loaded
	// 2-core machine.
	slack = 2 * time.Second
)

// short is the stop's windows of the plugins these tests run.
var short = runtime.Timing{ShutdownTimeout: 300 * time.Millisecond, ExitWindow: 100 * time.Millisecond, KillAfter: 100 * time.Millisecond}

// plugin is a floating plugin named name, instance name, that plays role
// with args, elected in dir and reached at addr.
func plugin(name, dir, addr, role string, args ...string) *spec.Plugin {
	p := testsupport.RolePlugin(spec.Floating, name, helperEnv, role, args...)
	p.Instance = name
	p.Elect = &spec.Elect{Dir: dir, Address: addr, TTL: spec.FromStd(ttl), Renew: spec.FromStd(renew),
		Poll: spec.FromStd(poll), LockStale: spec.FromStd(lockStale)}
	return p
}

// newPlacement is a floating placement of host id on a local placement
// of its own, closed (floating first) at the test's end.
func newPlacement(t *testing.T, id string, clock elect.Clock) *Placement {
	inner := local.New(local.Options{Timing: short})
	t.Cleanup(func() { assert.NoError(t, inner.Close()) })
	p := New(inner, Options{HostID: id, Clock: clock, Timing: short})
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	return p
}

// freezable is real time, or a wall clock whose timers stop firing while
// it is frozen, as a host's do while SIGSTOP holds it: its election
// neither renews nor polls, while the plugin it started runs on.
type freezable struct {
	base elect.Clock

	mu     sync.Mutex
	thawed chan struct{} // closed while not frozen
}

func newFreezable(base elect.Clock) *freezable {
	thawed := make(chan struct{})
	close(thawed)
	return &freezable{base: base, thawed: thawed}
}

func (c *freezable) Now() time.Time { return c.base.Now() }

func (c *freezable) NewTimer(d time.Duration) elect.Timer {
	t := &gatedTimer{c: make(chan time.Time, 1), stop: make(chan struct{})}
	real := c.base.NewTimer(d)
	go func() {
		defer real.Stop()
		select {
		case <-real.C():
		case <-t.stop:
			return
		}
		select {
		case <-c.gate():
		case <-t.stop:
			return
		}
		t.c <- c.base.Now()
	}()
	return t
}

func (c *freezable) gate() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.thawed
}

func (c *freezable) freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.thawed = make(chan struct{})
}

func (c *freezable) thaw() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.thawed)
}

type gatedTimer struct {
	c    chan time.Time
	stop chan struct{}
	once sync.Once
}

func (t *gatedTimer) C() <-chan time.Time { return t.c }

func (t *gatedTimer) Stop() bool {
	t.once.Do(func() { close(t.stop) })
	return true
}
