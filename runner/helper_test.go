//go:build linux

package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runnerapi"
	"github.com/graftland/graft/runtime/runtimetest"
)

// The plugins of these tests, and the runner daemons that the kill -9
// tests kill, are this test binary run again (go-plugin's helper
// processes): roleEnv names the part.
const (
	roleEnv = "RUNNER_TEST_ROLE"
	// markEnv is set in the plugins of one test to a value of its own, so
	// a scan of the machine's processes finds that test's alone.
	markEnv = "RUNNER_TEST_MARK"
	// noNamespaceEnv, set to 1, makes a runner daemon start its processes
	// without PID namespaces.
	noNamespaceEnv = "RUNNER_TEST_NO_NAMESPACE"
)

func TestMain(m *testing.M) {
	switch role := os.Getenv(roleEnv); role {
	case "":
		goleak.VerifyTestMain(m)
	case "runner":
		daemonMain()
	default:
		pluginMain(role, os.Args[1:])
	}
}

// pluginMain acts as the plugin role names, and exits.
func pluginMain(role string, args []string) {
	say := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
	sigs := make(chan os.Signal, 8)
	switch role {
	case "cooperative": // exits at once on SIGTERM or SIGINT
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		say("ready generation=%s", os.Getenv("GRAFT_GENERATION"))
		s := <-sigs
		say("got %v, bye", s)
		os.Exit(0)
	case "quiet": // writes nothing, not even to a pipe no one reads, and exits at once on SIGTERM or SIGINT
		signal.Ignore(syscall.SIGPIPE)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		<-sigs
		os.Exit(0)
	case "stubborn": // says which signals it gets, and only SIGKILL ends it
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		say("ready generation=%s", os.Getenv("GRAFT_GENERATION"))
		for s := range sigs {
			say("got %v", s)
		}
	case "exit": // prints args[1:] as lines, then exits with status args[0]
		code, _ := strconv.Atoi(args[0])
		for _, line := range args[1:] {
			say("%s", line)
		}
		os.Exit(code)
	case "env": // prints NAME=value, or NAME unset, for each of args, then acts as cooperative
		for _, k := range args {
			if v, ok := os.LookupEnv(k); ok {
				say("%s=%s", k, v)
			} else {
				say("%s unset", k)
			}
		}
		pluginMain("cooperative", nil)
	case "identity": // prints graft's variables, then acts as cooperative
		say("id=%s generation=%s plugin=%s invocation=%s", os.Getenv("GRAFT_INSTANCE_ID"), os.Getenv("GRAFT_GENERATION"),
			os.Getenv("GRAFT_PLUGIN"), os.Getenv(EnvInvocation))
		pluginMain("cooperative", nil)
	case "listen": // waits args[0], then listens on args[1] and acts as cooperative
		d, _ := time.ParseDuration(args[0])
		say("waiting %s", d)
		time.Sleep(d)
		l, err := net.Listen("tcp", args[1])
		if err != nil {
			say("listen: %v", err)
			os.Exit(3)
		}
		defer l.Close()
		pluginMain("cooperative", nil)
	default:
		familyMain(role, args)
	}
}

// familyMain acts as the plugin roles that start processes of their own
// (children in the plugin's group, a grandchild that escapes into a
// session of its own) or are one of those, and exits.
func familyMain(role string, args []string) {
	say := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
	switch role {
	case "forker": // starts args[0] stubborn children in its group, prints their pids, then acts as cooperative
		n, _ := strconv.Atoi(args[0])
		var pids []string
		for range n {
			pids = append(pids, strconv.Itoa(spawn("stubborn", false)))
		}
		time.Sleep(50 * time.Millisecond) // let them install their handlers
		say("children %s", strings.Join(pids, " "))
		pluginMain("cooperative", nil)
	case "daemon": // double-forks a stubborn grandchild into a new session, prints its pid, then acts as stubborn
		say("daemon %d", spawn("setsid-spawner", false))
		pluginMain("stubborn", nil)
	case "setsid-spawner": // the middle of a double fork: new session, spawn, print, exit
		fmt.Println(spawn("deaf", true))
		os.Exit(0)
	case "leaver": // double-forks a quiet grandchild into a new session, prints its pid, then acts as cooperative
		say("daemon %d", spawn("setsid-leaver", false))
		pluginMain("cooperative", nil)
	case "setsid-leaver": // the middle of the leaver's double fork
		fmt.Println(spawn("quiet", true))
		os.Exit(0)
	case "deaf": // ignores SIGTERM and SIGINT, writes nothing (its output's reader may be gone)
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		select {}
	default:
		fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
		os.Exit(2)
	}
}

// spawn starts this binary as role, optionally in a new session, and
// returns its pid without waiting for it; for the middle of a double
// fork, the pid its child prints.
func spawn(role string, setsid bool) int {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	if role == "setsid-spawner" || role == "setsid-leaver" {
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			panic(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		return pid
	}
	cmd.Stdout = os.Stdout
	if setsid {
		cmd.Stdout = os.Stderr // the middle's stdout is read to its end
	}
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	return runtimetest.HostPID(cmd.Process.Pid) // as the tests see it
}

// daemonMain is a runner daemon as graft runner is: a child subreaper
// serving a runner on a unix socket until SIGTERM.
func daemonMain() {
	reaper, err := proc.StartReaper()
	if err != nil {
		fmt.Println("reaper:", err)
		os.Exit(1)
	}
	defer reaper.Stop()
	grace, _ := time.ParseDuration(os.Getenv("RUNNER_TEST_GRACE"))
	if size := os.Getenv("RUNNER_TEST_TMPFS"); size != "" {
		// A state dir on a small file system of its own, in this
		// process's own mount namespace.
		if err := unix.Mount("tmpfs", os.Getenv("RUNNER_TEST_DIR"), "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
			fmt.Println("mount:", err)
			os.Exit(1)
		}
	}
	r, err := Open(os.Getenv("RUNNER_TEST_DIR"), Options{Grace: grace, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		NoNamespace: os.Getenv(noNamespaceEnv) == "1"})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	ln, err := ListenConfig{Addr: "unix://" + os.Getenv("RUNNER_TEST_SOCK")}.Listen()
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: r.Handler()}
	go srv.Serve(ln)
	fmt.Println("ready")
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	<-sigs
	r.Close()
	srv.Close()
	os.Exit(0)
}

// plugin is the start request of a plugin that acts as role, marked as
// the test's.
func plugin(t *testing.T, sess, role string, args ...string) runnerapi.Start {
	return runnerapi.Start{
		Session: sess,
		Plugin:  role,
		Project: "test",
		Spec: launch.Spec{
			Command: append([]string{os.Args[0]}, args...),
			// Under -race a program sleeps a second at exit unless told not to.
			Env:        map[string]string{roleEnv: role, markEnv: mark(t), "GORACE": "atexit_sleep_ms=0"},
			StopSignal: "SIGTERM",
		},
	}
}

// mark is the test's value of markEnv.
func mark(t *testing.T) string {
	return strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()) + "-" + strconv.Itoa(os.Getpid())
}

// harness is a runner of the test process on a loopback server.
type harness struct {
	*client
	r   *Runner
	dir string
	log *runtimetest.Recorder // the runner's log
	srv *httptest.Server
}

var short = Options{Lease: 2 * time.Second, Grace: 200 * time.Millisecond}

// newHarness opens a runner on a fresh state dir (or dir) and serves it.
func newHarness(t *testing.T, opt Options, dir ...string) *harness {
	t.Helper()
	h := &harness{log: runtimetest.NewRecorder()}
	h.dir = t.TempDir()
	if len(dir) > 0 {
		h.dir = dir[0]
	}
	opt.Logger = slog.New(slog.NewTextHandler(h.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r, err := Open(h.dir, opt)
	require.NoError(t, err)
	h.r = r
	h.srv = httptest.NewServer(r.Handler())
	h.client = newClient(t, h.srv.URL, opt.Token, h.srv.Client())
	t.Cleanup(func() { h.close(t) })
	return h
}

func (h *harness) close(t *testing.T) {
	if h.r == nil {
		return
	}
	assert.NoError(t, h.r.Close())
	h.srv.Close()
	h.client.hc.CloseIdleConnections()
	h.r = nil
}

// client talks to a runner as a host would.
type client struct {
	t     *testing.T
	base  string
	token string
	hc    *http.Client
}

func newClient(t *testing.T, base, token string, hc *http.Client) *client {
	c := &client{t: t, base: base, token: token, hc: hc}
	t.Cleanup(hc.CloseIdleConnections)
	return c
}

// unixClient is a client of a runner on a unix socket.
func unixClient(t *testing.T, path string) *client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return newClient(t, "http://runner", "", &http.Client{Transport: tr})
}

// call sends a request with in as its JSON body (nil: none) and decodes a
// 200 answer into out. It returns the status and, for an error, its body.
func (c *client) call(method, path string, in, out any) (int, runnerapi.ErrorBody) {
	c.t.Helper()
	status, body, err := c.try(method, path, in, out)
	require.NoError(c.t, err)
	return status, body
}

func (c *client) try(method, path string, in, out any) (int, runnerapi.ErrorBody, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, runnerapi.ErrorBody{}, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		return 0, runnerapi.ErrorBody{}, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, runnerapi.ErrorBody{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, runnerapi.ErrorBody{}, err
	}
	if resp.StatusCode != http.StatusOK {
		var e runnerapi.ErrorBody
		if err := json.Unmarshal(b, &e); err != nil {
			return resp.StatusCode, e, fmt.Errorf("error answer %d not JSON: %q", resp.StatusCode, b)
		}
		return resp.StatusCode, e, nil
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, runnerapi.ErrorBody{}, err
		}
	}
	return resp.StatusCode, runnerapi.ErrorBody{}, nil
}

func (c *client) open(lease time.Duration) string {
	c.t.Helper()
	var s runnerapi.Session
	status, e := c.call("POST", "/v1/sessions", runnerapi.OpenSession{Holder: c.t.Name(), LeaseMillis: lease.Milliseconds()}, &s)
	require.Equal(c.t, http.StatusOK, status, "%+v", e)
	require.NotEmpty(c.t, s.Session)
	return s.Session
}

func (c *client) renew(sess string) int {
	c.t.Helper()
	status, _ := c.call("POST", "/v1/sessions/"+sess+"/renew", nil, nil)
	return status
}

// keepAlive renews sess every quarter of testLease until the returned
// function is called: what a test sets up under a short lease (processes
// started, ready) then cannot outlast the lease on a slow machine. That
// function renews once more and returns when it sent that renewal: the
// lease runs from no earlier than then.
func (c *client) keepAlive(sess string) (last func() time.Time) {
	c.t.Helper()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(testLease / 4)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				c.try("POST", "/v1/sessions/"+sess+"/renew", nil, nil)
			}
		}
	}()
	var once sync.Once
	end := func() { once.Do(func() { close(stop); <-done }) }
	c.t.Cleanup(end)
	return func() time.Time {
		c.t.Helper()
		end()
		sent := time.Now()
		require.Equal(c.t, http.StatusOK, c.renew(sess), "renewed until now")
		return sent
	}
}

// start starts req and requires it to work.
func (c *client) start(name string, req runnerapi.Start) runnerapi.Started {
	c.t.Helper()
	st, status, e := c.tryStart(name, req)
	require.Equal(c.t, http.StatusOK, status, "%+v", e)
	return st
}

func (c *client) tryStart(name string, req runnerapi.Start) (runnerapi.Started, int, runnerapi.ErrorBody) {
	c.t.Helper()
	var st runnerapi.Started
	status, e := c.call("POST", "/v1/instances/"+name+"/start", req, &st)
	return st, status, e
}

func (c *client) stop(sess, name string, gen int64, shutdown time.Duration) (runnerapi.StopResult, int, runnerapi.ErrorBody) {
	c.t.Helper()
	var res runnerapi.StopResult
	status, e := c.call("POST", "/v1/instances/"+name+"/stop", runnerapi.Stop{Session: sess, Generation: gen, ShutdownTimeoutMillis: shutdown.Milliseconds()}, &res)
	return res, status, e
}

func (c *client) status() runnerapi.Status {
	c.t.Helper()
	var st runnerapi.Status
	status, e := c.call("GET", "/v1/status", nil, &st)
	require.Equal(c.t, http.StatusOK, status, "%+v", e)
	return st
}

// events follows a session's event stream until the test ends.
type events struct {
	c      chan runnerapi.Event
	cancel context.CancelFunc
	done   chan struct{}
}

func (c *client) events(sess string) *events {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/v1/sessions/"+sess+"/events", nil)
	require.NoError(c.t, err)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	require.NoError(c.t, err)
	require.Equal(c.t, http.StatusOK, resp.StatusCode)
	require.Equal(c.t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	ev := &events{c: make(chan runnerapi.Event, 1024), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(ev.done)
		defer close(ev.c)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var e runnerapi.Event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				ev.c <- e
			}
		}
	}()
	c.t.Cleanup(ev.close)
	return ev
}

func (ev *events) close() {
	ev.cancel()
	<-ev.done
}

// next returns the next event that is not a ping, or fails after d.
func (ev *events) next(t *testing.T, d time.Duration) runnerapi.Event {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case e, ok := <-ev.c:
			require.True(t, ok, "the stream ended")
			if e.Type != runnerapi.EventPing {
				return e
			}
		case <-timeout:
			t.Fatalf("no event within %s", d)
		}
	}
}

// until returns the events up to the first that matches, or fails after d.
func (ev *events) until(t *testing.T, d time.Duration, match func(runnerapi.Event) bool) []runnerapi.Event {
	t.Helper()
	var seen []runnerapi.Event
	deadline := time.Now().Add(d)
	for {
		e := ev.next(t, time.Until(deadline))
		seen = append(seen, e)
		if match(e) {
			return seen
		}
	}
}

// ready waits for a plugin's "ready" line: its signal handlers are set.
func (ev *events) ready(t *testing.T) runnerapi.Event {
	t.Helper()
	evs := ev.until(t, 10*time.Second, func(e runnerapi.Event) bool { return strings.HasPrefix(e.Line, "ready") })
	return evs[len(evs)-1]
}

// alive reports whether pid names a live process (a zombie is not).
func alive(pid int) bool { return !runtimetest.Gone(pid) }

// marked lists the live processes of the test (by its mark) with their
// GRAFT_INSTANCE_ID and GRAFT_GENERATION.
func marked(t *testing.T) []markedProc {
	want := markEnv + "=" + mark(t)
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []markedProc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(b, []byte(want)) {
			continue
		}
		p := markedProc{pid: pid}
		for _, kv := range bytes.Split(b, []byte{0}) {
			k, v, _ := strings.Cut(string(kv), "=")
			switch k {
			case markEnv:
				if v != mark(t) {
					p.pid = 0
				}
			case "GRAFT_INSTANCE_ID":
				p.instance = v
			case "GRAFT_GENERATION":
				p.gen, _ = strconv.ParseInt(v, 10, 64)
			case roleEnv:
				p.role = v
			}
		}
		if p.pid != 0 && alive(pid) {
			out = append(out, p)
		}
	}
	return out
}

type markedProc struct {
	pid      int
	instance string
	gen      int64
	role     string
}

// overlapWatch scans the machine's processes until stopped, and fails
// the test if it ever sees processes of two generations of one instance
// alive at once.
func overlapWatch(t *testing.T) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	var bad []string
	go func() {
		defer close(done)
		for {
			gens := map[string]map[int64]bool{}
			for _, p := range marked(t) {
				if gens[p.instance] == nil {
					gens[p.instance] = map[int64]bool{}
				}
				gens[p.instance][p.gen] = true
				if len(gens[p.instance]) > 1 {
					bad = append(bad, fmt.Sprintf("%s: generations %v alive at once", p.instance, gens[p.instance]))
				}
			}
			select {
			case <-quit:
				return
			case <-time.After(3 * time.Millisecond):
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		assert.Empty(t, bad, "two generations of an instance alive at once")
	}
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// errorsAs is errors.As for tests that want the target back.
func errorsAs[T error](err error) (T, bool) {
	var target T
	ok := errors.As(err, &target)
	return target, ok
}
