//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime/local"
)

// The floating tests run several real `graft host` processes on this
// machine, each with its own state dir and plugins file, sharing one
// election directory, with short durations. Each host's relay serves on
// its own loopback port; each host's client uses the relay and prints the
// address it was given. They keep what needs real hosts: kill -9,
// SIGSTOP, a relay's family dying with its host, the CLI's view. The
// election's other cases (stale locks, skewed clocks, a read-only
// directory, exhausted epochs) are package tests of runtime/floating.
//
// A leader that cannot renew gives up 2 × renew after its last renewal
// and then may take the stop's fixed 7 seconds, all within ttl (the spec
// refuses less): so ttl is 8 seconds here, however fast the relay stops.
const (
	fTTL       = 8 * time.Second
	fRenew     = 400 * time.Millisecond
	fPoll      = 250 * time.Millisecond
	fLockStale = 1500 * time.Millisecond
	// fSlack covers the herd backoff (at most 0.9 s), starting a process
	// and a loaded 2-core machine.
	fSlack = 2 * time.Second
)

type fleet struct {
	t     *testing.T
	run   string // marks every process of the fleet (GRAFT_TEST_RUN)
	elect string // the shared election directory
	hosts []*fhost
	// etcd, for a fleet that elects on etcd, reads who leads there.
	etcd *etcdReader
}

type fhost struct {
	f    *fleet
	id   string
	dir  string // holds plugins.yaml and the state dir .graft
	addr string // where its relay serves when it leads

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	frozen bool
}

// newFleet makes n hosts; none runs yet. Whatever happens, the test's end
// stops every host and leaves no process behind.
func newFleet(t *testing.T, n int) *fleet {
	root := t.TempDir()
	f := &fleet{t: t, run: root, elect: filepath.Join(root, "elect")}
	require.NoError(t, os.Mkdir(f.elect, 0o755))
	for i := range n {
		h := &fhost{f: f, id: fmt.Sprintf("h%d", i+1), dir: filepath.Join(root, fmt.Sprintf("h%d", i+1)), addr: testsupport.FreeAddr(t)}
		require.NoError(t, os.Mkdir(h.dir, 0o755))
		yaml := fmt.Sprintf(`name: fleet
plugins:
  relay:
    run: floating
    command: [plug, listen, relay, %q]
    elect: {dir: %q, address: %q, ttl: %d millis, renew: %d millis, poll: %d millis, lockStale: %d millis}
  client:
    command: [plug, env, client, GRAFT_ADDR_RELAY]
    uses: [relay]
`, h.addr, f.elect, h.addr, fTTL.Milliseconds(), fRenew.Milliseconds(), fPoll.Milliseconds(), fLockStale.Milliseconds())
		require.NoError(t, os.WriteFile(h.file(), []byte(yaml), 0o644))
		f.hosts = append(f.hosts, h)
	}
	t.Cleanup(f.stop)
	return f
}

func (h *fhost) file() string  { return filepath.Join(h.dir, "plugins.yaml") }
func (h *fhost) state() string { return filepath.Join(h.dir, ".graft") }

// start runs the host and applies its plugins file, which returns once the
// relay's leader is known.
func (h *fhost) start() {
	require.NoError(h.f.t, h.tryStart())
}

func (h *fhost) tryStart() error {
	if err := h.spawn(); err != nil {
		return err
	}
	if out, err := h.graft("apply"); err != nil {
		return fmt.Errorf("apply on %s: %w: %s", h.id, err, out)
	}
	return nil
}

// spawn runs `graft host` and waits until it answers. A host the fleet
// kills takes its local plugins with it (--adopt-window 0): no host comes
// after it on its state dir.
func (h *fhost) spawn() error {
	cmd := exec.Command("graft", "--file", h.file(), "host", "--host-id", h.id, "--adopt-window", "0")
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN="+h.f.run, "NO_COLOR=1")
	logf, err := os.OpenFile(filepath.Join(h.dir, "host.stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	h.mu.Lock()
	h.cmd, h.exited, h.frozen = cmd, exited, false
	h.mu.Unlock()
	c, err := hostapi.NewClient(h.state())
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for c.Ping(context.Background(), time.Second) != nil {
		select {
		case <-exited:
			return fmt.Errorf("host %s exited: %s", h.id, h.stderr())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("host %s does not answer", h.id)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// graft runs a graft command against this host's plugins file.
func (h *fhost) graft(args ...string) (string, error) {
	cmd := exec.Command("graft", append([]string{"--file", h.file()}, args...)...)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN="+h.f.run, "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (h *fhost) stderr() string {
	b, _ := os.ReadFile(filepath.Join(h.dir, "host.stderr"))
	return string(b)
}

func (h *fhost) running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil {
		return false
	}
	select {
	case <-h.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to the host process; SIGSTOP and SIGCONT freeze and
// resume it (its plugins run on).
func (h *fhost) signal(sig syscall.Signal) {
	h.mu.Lock()
	defer h.mu.Unlock()
	require.NoError(h.f.t, h.cmd.Process.Signal(sig))
	switch sig {
	case syscall.SIGSTOP:
		h.frozen = true
	case syscall.SIGCONT:
		h.frozen = false
	}
}

func (h *fhost) isFrozen() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.frozen
}

// kill ends the host with SIGKILL and waits for it; its plugins die with
// it (the kernel kills their PID namespaces).
func (h *fhost) kill() {
	h.signal(syscall.SIGKILL)
	h.wait(10 * time.Second)
}

// terminate stops the host gracefully and waits for it.
func (h *fhost) terminate() {
	h.signal(syscall.SIGCONT)
	h.signal(syscall.SIGTERM)
	h.wait(20 * time.Second)
}

func (h *fhost) wait(d time.Duration) {
	select {
	case <-h.exited:
	case <-time.After(d):
		h.f.t.Fatalf("host %s did not exit", h.id)
	}
}

// stop ends every host still running, then anything of the fleet left.
func (f *fleet) stop() {
	for _, h := range f.hosts {
		if h.running() {
			h.cmd.Process.Signal(syscall.SIGCONT)
			h.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, h := range f.hosts {
		if h.running() {
			select {
			case <-h.exited:
			case <-time.After(20 * time.Second):
				h.cmd.Process.Kill()
				<-h.exited
				f.t.Errorf("host %s ignored SIGTERM", h.id)
			}
		}
	}
	if left := marked(f.run); len(left) > 0 {
		f.t.Errorf("processes left after every host stopped: %v", left)
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if f.t.Failed() {
		for _, h := range f.hosts {
			f.t.Logf("--- host %s (%s) ---\n%s", h.id, h.addr, h.stderr())
		}
	}
}

// status is the host's state; a frozen or stopped host has none.
func (h *fhost) status() (*hostapi.Status, error) {
	c, err := hostapi.NewClient(h.state())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return c.Status(ctx)
}

// relay is the relay's record on the host.
func (h *fhost) relay() (hostapi.PluginStatus, error) { return h.record("relay") }

// lease reads the lease file, as another program would.
func (f *fleet) lease() elect.Lease {
	if f.etcd != nil {
		return f.etcd.lease()
	}
	l, _, err := elect.Read(f.elect, "fleet.relay")
	if err != nil {
		return elect.Lease{}
	}
	return l
}

func (f *fleet) host(id string) *fhost {
	for _, h := range f.hosts {
		if h.id == id {
			return h
		}
	}
	f.t.Fatalf("no host %q", id)
	return nil
}

// startAll starts every host.
//
// The first host starts alone, until it leads and its relay answers; the
// others then start together. A host that bootstraps after the leader's
// first renewal, while the leader's relay is still starting, finds its
// address silent and takes over (docs/semantics.md, the election's
// bootstrap), and on a loaded machine a relay's start can outlast the
// fleet's renew of 400 ms. The election's own tests (elect.TestColdStart,
// TestBootstrap) cover hosts that start together; these start from one
// leader.
func (f *fleet) startAll() {
	f.hosts[0].start()
	l, _ := f.leaderAfter(0, 10*time.Second)
	require.Eventually(f.t, func() bool { return dial("tcp", l.Address) == nil }, 10*time.Second, 10*time.Millisecond, "the relay answers at %s", l.Address)
	rest := f.hosts[1:]
	errs := make(chan error, len(rest))
	for _, h := range rest {
		go func() { errs <- h.tryStart() }()
	}
	for range rest {
		require.NoError(f.t, <-errs)
	}
}

// leaderAfter waits, up to d, for a lease with an epoch above epoch whose
// holder runs the relay, and returns it with when it was first seen.
func (f *fleet) leaderAfter(epoch int64, d time.Duration) (elect.Lease, time.Time) {
	f.t.Helper()
	deadline := time.Now().Add(d)
	var seen time.Time
	for {
		l := f.lease()
		if l.Epoch > epoch && !l.Released {
			if seen.IsZero() {
				seen = time.Now()
			}
			if r, err := f.host(l.Holder).relay(); err == nil && r.Role == "leader" && r.Status == string(plan.Running) && r.Generation == l.Epoch {
				return l, seen
			}
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("no leader past epoch %d within %s; lease: %+v", epoch, d, l)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// clientAddrs is every address the host's client was started with, in
// order.
func (h *fhost) clientAddrs() []string {
	b, _ := os.ReadFile(filepath.Join(h.state(), "logs", "client.log"))
	var addrs []string
	for _, m := range clientLine.FindAllStringSubmatch(string(b), -1) {
		addrs = append(addrs, m[1])
	}
	return addrs
}

var clientLine = regexp.MustCompile(`client GRAFT_ADDR_RELAY=(\S*)`)

// waitClient waits until the host's client was last started with addr.
func (h *fhost) waitClient(addr string, d time.Duration) {
	h.f.t.Helper()
	deadline := time.Now().Add(d)
	for {
		addrs := h.clientAddrs()
		if len(addrs) > 0 && addrs[len(addrs)-1] == addr {
			if r, err := h.record("client"); err == nil && r.Status == string(plan.Running) {
				return
			}
		}
		if time.Now().After(deadline) {
			h.f.t.Fatalf("the client of %s was not restarted with %s: started with %v", h.id, addr, addrs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *fhost) record(name string) (hostapi.PluginStatus, error) {
	st, err := h.status()
	if err != nil {
		return hostapi.PluginStatus{}, err
	}
	for _, r := range st.Plugins {
		if r.Name == name {
			return r, nil
		}
	}
	return hostapi.PluginStatus{}, fmt.Errorf("no %s", name)
}

// generations lists, per relay generation, the hosts whose relay ran with
// it: what actually ran, from the relays' own output.
func (f *fleet) generations() map[int64][]string {
	ran := map[int64][]string{}
	for _, h := range f.hosts {
		b, _ := os.ReadFile(filepath.Join(h.state(), "logs", "relay.log"))
		for _, m := range relayUp.FindAllStringSubmatch(string(b), -1) {
			g, _ := strconv.ParseInt(m[1], 10, 64)
			if !contains(ran[g], h.id) {
				ran[g] = append(ran[g], h.id)
			}
		}
	}
	return ran
}

// oneHostPerGeneration checks that no generation of the relay ran on two
// hosts.
func (f *fleet) oneHostPerGeneration() {
	for g, hosts := range f.generations() {
		assert.Len(f.t, hosts, 1, "generation %d ran on %v", g, hosts)
	}
}

var relayUp = regexp.MustCompile(`relay up instance=fleet.relay generation=(\d+)`)

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// settle waits until every host that answers, but leader, follows it. A
// host still bootstrapping, contending or backing off (a candidate) would
// find a dead leader's address silent and take over at once, not after
// ttl: the tests of failover wait for this before they kill a leader.
func (f *fleet) settle(leader string, d time.Duration) {
	f.t.Helper()
	require.Eventually(f.t, func() bool {
		for _, h := range f.hosts {
			if h.id == leader || !h.running() || h.isFrozen() {
				continue
			}
			if r, err := h.relay(); err != nil || r.Role != "follower" {
				return false
			}
		}
		return true
	}, d, 10*time.Millisecond, "every host follows %s", leader)
}

// leaders lists the hosts, among those that answer, that say they lead.
func (f *fleet) leaders() []string {
	var ids []string
	for _, h := range f.hosts {
		if !h.running() || h.isFrozen() {
			continue
		}
		if r, err := h.relay(); err == nil && r.Role == "leader" {
			ids = append(ids, h.id)
		}
	}
	return ids
}

func pidAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(stat), ") Z ")
}

func TestFloatingFailover(t *testing.T) {
	f := newFleet(t, 5)
	f.startAll()

	// Cold start: exactly one leader, epoch 1; the rest stand by, and every
	// client was given the leader's address.
	l, _ := f.leaderAfter(0, 10*time.Second)
	assert.Equal(t, int64(1), l.Epoch)
	assert.Equal(t, []string{l.Holder}, f.leaders())
	f.settle(l.Holder, 5*time.Second)
	for _, h := range f.hosts {
		r, err := h.relay()
		require.NoError(t, err)
		assert.Equal(t, int64(1), r.Generation, h.id)
		assert.Equal(t, l.Address, r.Address, h.id)
		if h.id != l.Holder {
			assert.Equal(t, string(plan.Standby), r.Status, h.id)
			assert.Equal(t, "follower", r.Role, h.id)
		}
		h.waitClient(l.Address, 5*time.Second)
	}
	out, err := f.host(l.Holder).graft("leader", "relay")
	require.NoError(t, err, out)
	assert.Contains(t, out, "Holder:    "+l.Holder)
	assert.Contains(t, out, "Address:   "+l.Address)
	assert.Contains(t, out, "Epoch:     1")
	assert.Contains(t, out, "This host: "+l.Holder+", leader")
	out, err = f.host(l.Holder).graft("status")
	require.NoError(t, err, out)
	assert.Regexp(t, `relay\s+floating \(leader\)\s+running\s+fleet.relay\s+1`, out)

	// kill -9 the leader's host: another leads within ttl + poll, with
	// epoch 2, and the clients of the others restart with its address.
	// Every host follows by now (settle, above).
	old := f.host(l.Holder)
	old.kill()
	killed := time.Now()
	l2, seen := f.leaderAfter(1, fTTL+fPoll+fSlack+5*time.Second)
	took := seen.Sub(killed)
	t.Logf("failover after kill -9: %s (ttl + poll = %s)", took, fTTL+fPoll)
	assert.Equal(t, int64(2), l2.Epoch)
	assert.NotEqual(t, old.id, l2.Holder)
	assert.Greater(t, took, fTTL-fRenew, "not before the lease froze for ttl")
	assert.Less(t, took, fTTL+fPoll+fSlack)
	for _, h := range f.hosts {
		if h != old {
			h.waitClient(l2.Address, 5*time.Second)
		}
	}

	// A graceful stop of the leader releases the lease: another takes
	// over within a poll.
	second := f.host(l2.Holder)
	stopped := time.Now()
	second.terminate()
	l3, seen := f.leaderAfter(2, 10*time.Second)
	took = seen.Sub(stopped)
	t.Logf("handover after a graceful stop: %s (poll = %s)", took, fPoll)
	assert.Equal(t, int64(3), l3.Epoch)
	assert.Less(t, took, fPoll+fSlack)

	// The killed host comes back as a follower of the third epoch.
	old.start()
	r, err := old.relay()
	require.NoError(t, err)
	assert.Equal(t, string(plan.Standby), r.Status)
	assert.Equal(t, int64(3), r.Generation)
	old.waitClient(l3.Address, 5*time.Second)
	assert.Equal(t, []string{l3.Holder}, f.leaders())
	f.oneHostPerGeneration()
}

func TestFloatingFrozenLeader(t *testing.T) {
	f := newFleet(t, 3)
	f.startAll()
	l, _ := f.leaderAfter(0, 10*time.Second)
	frozen := f.host(l.Holder)
	r, err := frozen.relay()
	require.NoError(t, err)
	oldPID := r.PID
	require.NotZero(t, oldPID)

	// Frozen past ttl: the others elect a new leader. The old relay is
	// gone before: the init of the frozen host's namespace, which the
	// freeze does not stop, ended it at the end of its term, a stop
	// budget before its deadline (docs/semantics.md, "Floating plugins:
	// the election").
	frozen.signal(syscall.SIGSTOP)
	froze := time.Now()
	testsupport.WaitGone(t, fTTL, oldPID)
	t.Logf("the frozen leader's relay was stopped %s after SIGSTOP (ttl %s)", time.Since(froze).Round(time.Millisecond), fTTL)
	assert.Equal(t, l.Epoch, f.lease().Epoch, "no other host led before it was gone")
	l2, _ := f.leaderAfter(l.Epoch, fTTL+fPoll+fSlack+5*time.Second)
	require.NotEqual(t, frozen.id, l2.Holder)

	// Resumed, it finds its renewal too late and follows.
	frozen.signal(syscall.SIGCONT)
	require.Eventually(t, func() bool {
		r, err := frozen.relay()
		return err == nil && r.Role == "follower" && r.Status == string(plan.Standby) && r.Generation == l2.Epoch
	}, 5*time.Second, 20*time.Millisecond)
	assert.Equal(t, []string{l2.Holder}, f.leaders())
	frozen.waitClient(l2.Address, 5*time.Second)
	assert.Contains(t, frozen.stderr(), "lost the lead: stopping the plugin first")
}

// TestFloatingSoak kills and freezes hosts at random for a number of
// rounds (GRAFT_SOAK_ROUNDS, default 4) and checks throughout that epochs
// only grow, that no epoch ever had two leaders among the hosts that
// answer, and, from what ran, that no generation ran on two hosts.
func TestFloatingSoak(t *testing.T) {
	rounds := 4
	if s := os.Getenv("GRAFT_SOAK_ROUNDS"); s != "" {
		var err error
		rounds, err = strconv.Atoi(s)
		require.NoError(t, err)
	}
	source := uint64(time.Now().UnixNano())
	t.Logf("random source %d", source)
	rng := rand.New(rand.NewPCG(source, source))
	f := newFleet(t, 5)
	f.startAll()
	l, _ := f.leaderAfter(0, 10*time.Second)

	// A watcher samples the lease and the hosts' roles throughout.
	w := watchFleet(f)
	for round := range rounds {
		l = f.soakRound(t, rng, round, l)
	}
	// Let every resumed host settle, then stop watching.
	time.Sleep(fRenew + fPoll + 500*time.Millisecond)
	w.stop()

	require.NoError(t, w.err)
	t.Logf("epochs seen: %v", w.epochs)
	for i := 1; i < len(w.epochs); i++ {
		assert.Greater(t, w.epochs[i], w.epochs[i-1], "epochs strictly increase")
	}
	for epoch, hosts := range w.claimed {
		assert.Len(t, hosts, 1, "epoch %d was led by %v", epoch, hosts)
	}
	f.oneHostPerGeneration()
	assert.Len(t, f.leaders(), 1)
}

// soakRound disturbs the leader of lease l at random: kills it, freezes
// it past the lease, or freezes a follower and stops the leader
// gracefully. It returns the lease of the leader elected after it.
func (f *fleet) soakRound(t *testing.T, rng *rand.Rand, round int, l elect.Lease) elect.Lease {
	leader := f.host(l.Holder)
	switch action := rng.IntN(3); action {
	case 0:
		t.Logf("round %d: kill -9 %s", round, leader.id)
		leader.kill()
		l, _ = f.leaderAfter(l.Epoch, fTTL+fPoll+fSlack+5*time.Second)
		leader.start()
	case 1:
		// Frozen until another host leads, and a little longer: a freeze
		// only just past ttl may end before any follower has looked, and
		// the leader rightly goes on.
		extra := time.Duration(rng.IntN(1000)) * time.Millisecond
		t.Logf("round %d: freeze %s until another leads, and %s more", round, leader.id, extra)
		leader.signal(syscall.SIGSTOP)
		l, _ = f.leaderAfter(l.Epoch, fTTL+fPoll+fSlack+5*time.Second)
		time.Sleep(extra)
		leader.signal(syscall.SIGCONT)
	case 2:
		var follower *fhost
		for _, i := range rng.Perm(len(f.hosts)) {
			if f.hosts[i].id != leader.id {
				follower = f.hosts[i]
				break
			}
		}
		t.Logf("round %d: freeze follower %s, then stop leader %s gracefully", round, follower.id, leader.id)
		follower.signal(syscall.SIGSTOP)
		leader.terminate()
		l, _ = f.leaderAfter(l.Epoch, fTTL+fPoll+fSlack+5*time.Second)
		follower.signal(syscall.SIGCONT)
		leader.start()
	}
	return l
}

// fleetWatch samples a fleet's lease and its hosts' roles every 25 ms
// until stopped. Its fields are to be read once stop returns.
type fleetWatch struct {
	f       *fleet
	done    chan struct{} // closed to stop the sampling
	stopped chan struct{} // closed once it stopped

	mu      sync.Mutex
	epochs  []int64                   // each epoch the lease held, in the order seen
	claimed map[int64]map[string]bool // epoch -> hosts that said they led it
	err     error                     // the first epoch that went back
}

func watchFleet(f *fleet) *fleetWatch {
	w := &fleetWatch{f: f, done: make(chan struct{}), stopped: make(chan struct{}), claimed: map[int64]map[string]bool{}}
	go func() {
		defer close(w.stopped)
		for {
			select {
			case <-w.done:
				return
			case <-time.After(25 * time.Millisecond):
			}
			w.sampleLease()
			w.sampleRoles()
		}
	}()
	return w
}

// stop stops the sampling and waits until it stopped.
func (w *fleetWatch) stop() {
	close(w.done)
	<-w.stopped
}

// sampleLease records the lease's epoch when it changed, and an error
// when it went back.
func (w *fleetWatch) sampleLease() {
	le := w.f.lease()
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.epochs); le.Epoch != 0 && (n == 0 || w.epochs[n-1] != le.Epoch) {
		if n > 0 && le.Epoch < w.epochs[n-1] && w.err == nil {
			w.err = fmt.Errorf("epoch went from %d to %d", w.epochs[n-1], le.Epoch)
		}
		w.epochs = append(w.epochs, le.Epoch)
	}
}

// sampleRoles records, for each running host that is not frozen and says
// it leads, the epoch it leads.
func (w *fleetWatch) sampleRoles() {
	for _, h := range w.f.hosts {
		if !h.running() || h.isFrozen() {
			continue
		}
		r, err := h.relay()
		if err != nil || r.Role != "leader" || r.Generation == 0 || h.isFrozen() {
			continue // generation 0: a leader whose relay is still starting
		}
		w.mu.Lock()
		if w.claimed[r.Generation] == nil {
			w.claimed[r.Generation] = map[string]bool{}
		}
		w.claimed[r.Generation][h.id] = true
		w.mu.Unlock()
	}
}

// TestFloatingKilledLeaderTakesItsDaemon: the leader's host killed with
// SIGKILL takes its relay's whole family with it within 2 seconds, the
// daemon the relay double-forked into a session of its own included, long
// before another host takes over: no process of generation 1 runs beside
// generation 2 (the relay runs in a PID namespace of its own, which the
// kernel kills with the host).
func TestFloatingKilledLeaderTakesItsDaemon(t *testing.T) {
	f := newFleet(t, 2)
	// The relay still accepts on its address: a host whose campaign
	// bootstraps after the leader's first renewal probes it there, and a
	// silent address would have it take over at once.
	for _, h := range f.hosts {
		b, err := os.ReadFile(h.file())
		require.NoError(t, err)
		yaml := regexp.MustCompile(`command: \[plug, listen, relay, "[^"]*"\]`).ReplaceAllString(string(b), fmt.Sprintf("command: [plug, daemon, relay, %q]", h.addr))
		require.NoError(t, os.WriteFile(h.file(), []byte(yaml), 0o644))
	}
	f.startAll()
	l, _ := f.leaderAfter(0, 10*time.Second)
	f.settle(l.Holder, 5*time.Second)
	old := f.host(l.Holder)
	r, err := old.relay()
	require.NoError(t, err)
	var daemon int
	require.Eventually(t, func() bool {
		daemon = f.daemonOf(r.PID)
		return daemon != 0
	}, 10*time.Second, 10*time.Millisecond, "the relay's daemon runs")

	old.kill()
	killed := time.Now()
	took := testsupport.WaitGone(t, 2500*time.Millisecond, daemon).Sub(killed)
	t.Logf("the relay's daemon was gone %s after its host", took.Round(time.Millisecond))
	l2, _ := f.leaderAfter(1, fTTL+fPoll+fSlack+5*time.Second)
	assert.Equal(t, int64(2), l2.Epoch)
	assert.NotEqual(t, old.id, l2.Holder)
	f.oneHostPerGeneration()
}

// daemonOf returns the pid of the live daemon (plug serve NAME-daemon)
// that plugin process pid started, found by the invocation id it
// inherited, or 0.
func (f *fleet) daemonOf(pid int) int {
	env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	var inv string
	for _, kv := range strings.Split(string(env), "\x00") {
		if strings.HasPrefix(kv, local.EnvInvocation+"=") {
			inv = kv
		}
	}
	for _, p := range marked(f.run) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p))
		if p != pid && inv != "" && strings.HasPrefix(string(cmdline), "plug\x00serve\x00") &&
			strings.Contains("\x00"+string(env)+"\x00", "\x00"+inv+"\x00") {
			return p
		}
	}
	return 0
}
