//go:build linux

// Package fleet runs a fleet of real graft hosts electing floating
// plugins, on a real 3-member etcd cluster on loopback (Debian's
// etcd-server) or on one shared directory, and breaks it for real: kill -9
// and SIGSTOP of hosts, kills of etcd members and of the etcd leader, a
// host cut off from etcd, the whole cluster stopped, the directory made
// read-only. Each plugin is Hold, which takes a flock while it runs, so
// that two leaders of one plugin at once are seen, not inferred. It
// reports, per kind of fault, the violations, the failover times and the
// plugins left without a leader, and the load each host puts on etcd, its
// CPU and its memory. bench/fleet.sh runs it large; a test of cmd/graft
// runs it small, with each kind of fault once.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/etcdtest"
	"github.com/graftland/graft/internal/faultproxy"
	"github.com/graftland/graft/internal/fsfault"
)

// Kind is a kind of fault.
type Kind string

// The kinds of fault.
const (
	KillHost    Kind = "kill -9 of a leading host, restarted after"
	FreezeHost  Kind = "SIGSTOP of a leading host past the ttl, then SIGCONT"
	KillMember  Kind = "kill -9 of an etcd follower, restarted"
	KillLeader  Kind = "kill -9 of the etcd leader, restarted"
	Partition   Kind = "a leading host cut off from etcd past the ttl, healed"
	StopCluster Kind = "the whole etcd cluster stopped past the session TTL, started"
	ReadOnly    Kind = "the shared directory read-only past the ttl, writable again"
)

// Backends are the election backends the fleet runs on.
const (
	Etcd = "etcd"
	File = "file"
)

// Names are the kinds' short names, for flags.
var Names = map[string]Kind{
	"kill": KillHost, "freeze": FreezeHost, "member": KillMember, "leader": KillLeader,
	"partition": Partition, "cluster": StopCluster, "readonly": ReadOnly,
}

// Kinds are the kinds of fault on a backend.
func Kinds(backend string) []Kind {
	if backend == File {
		return []Kind{KillHost, FreezeHost, ReadOnly}
	}
	return []Kind{KillHost, FreezeHost, KillMember, KillLeader, Partition, StopCluster}
}

// Config is a fleet and the faults it goes through.
type Config struct {
	// Graft is the graft program the hosts run.
	Graft string
	// Hold is the command that runs Hold: DIR PLUGIN HOST are appended.
	Hold []string
	// Env is added to the environment of every host.
	Env []string
	// Root holds everything: the hosts' dirs, the records and locks, the
	// election directory or the etcd members' data.
	Root    string
	Backend string
	Hosts   int
	Plugins int
	// TTL is elect.ttl on the file backend and the session TTL on etcd
	// (whole seconds there); Renew, Poll and LockStale are those of elect.
	TTL, Renew, Poll, LockStale time.Duration
	// Faults is how many faults of each kind, at random moments; Only,
	// when not empty, keeps only those kinds.
	Faults int
	Only   []Kind
	// Steady is how long the load is measured before the first fault.
	Steady time.Duration
	// Seed starts the random source that picks the moments and targets.
	Seed uint64
	// Logf says what the fleet does; nil: nothing.
	Logf func(format string, args ...any)
}

// Fault is what one fault did.
type Fault struct {
	Kind   Kind
	Target string
	At     time.Time
	// Lost are the plugins whose leader changed after it.
	Lost int
	// Failovers are, for each plugin lost, the time from the fault to its
	// next leader's process holding the plugin's lock.
	Failovers []time.Duration
	// Extra counts the epoch changes beyond one per lost plugin, and any
	// change of a plugin whose leader the fault did not touch.
	Extra int
	// Elections counts the etcd elections (raft terms begun) from the
	// fault until the fleet settled after it. etcd extends every lease to
	// a whole TTL when it elects a leader, so a failover that takes longer
	// than the TTL may have had one in its way.
	Elections int
}

// Report is what a run saw.
type Report struct {
	Backend        string
	Hosts, Plugins int
	TTL            time.Duration
	// Violations are two holders of a plugin at once, or an epoch that
	// repeats on another host or goes back.
	Violations []string
	// Leaderless are the plugins with no leader after the run settled.
	Leaderless []string
	Faults     []Fault
	// EtcdPerHost is the etcd requests (gRPC messages received, all
	// members) per second per host, in the steady window.
	EtcdPerHost float64
	// CPU is each host's share of one core in the steady window, and RSS
	// its resident memory at the window's end, in bytes.
	CPU []float64
	RSS []int64
	// EtcdCPU is the etcd members' share of one core, together, in the
	// steady window, and EtcdElections the elections it held in it.
	EtcdCPU       float64
	EtcdElections int
}

// Run runs the fleet through its faults and reports. It stops every host
// and etcd member it started before it returns, whatever happened.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	f := &fleet{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	if f.cfg.Logf == nil {
		f.cfg.Logf = func(string, ...any) {}
	}
	defer func() {
		if cerr := f.close(); err == nil {
			err = cerr
		}
	}()
	if err := f.setUp(); err != nil {
		return nil, err
	}
	rep = &Report{Backend: cfg.Backend, Hosts: cfg.Hosts, Plugins: cfg.Plugins, TTL: cfg.TTL}
	if err := f.settle(ctx, f.settleWait()); err != nil {
		return nil, fmt.Errorf("the fleet never had a leader for each plugin: %w", err)
	}
	f.cfg.Logf("fleet: %d hosts lead %d plugins on %s", cfg.Hosts, cfg.Plugins, cfg.Backend)
	f.measure(ctx, rep)
	var faults []Kind
	for _, k := range Kinds(cfg.Backend) {
		if len(cfg.Only) > 0 && !slices.Contains(cfg.Only, k) {
			continue
		}
		for range cfg.Faults {
			faults = append(faults, k)
		}
	}
	f.rng.Shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
	for i, k := range faults {
		// Each fault finds the fleet whole, so that what follows it is its
		// own doing: a fleet still recovering from the last one gets
		// another while.
		if len(f.leaderless()) > 0 {
			if err := f.settle(ctx, f.settleWait()); err != nil {
				f.cfg.Logf("fleet: before %s: %v", k, err)
			}
		}
		// A random moment: up to three renewals into the lease's cycle.
		if !sleep(ctx, time.Duration(f.rng.Int64N(int64(3*cfg.Renew)+1))) {
			return rep, ctx.Err()
		}
		term := f.etcdTerm()
		fault, err := f.inject(ctx, k)
		if err != nil {
			return rep, fmt.Errorf("fault %d (%s): %w", i+1, k, err)
		}
		if err := f.settle(ctx, f.settleWait()); err != nil {
			f.cfg.Logf("fleet: after %s on %s: %v", k, fault.Target, err)
		}
		f.account(&fault)
		fault.Elections = int(f.etcdTerm() - term)
		f.cfg.Logf("fleet: %s on %s: %d lost, failovers %v, extra changes %d, etcd elections %d",
			k, fault.Target, fault.Lost, fault.Failovers, fault.Extra, fault.Elections)
		rep.Faults = append(rep.Faults, fault)
	}
	// Settled: each plugin has one leader, for a while.
	if !sleep(ctx, 2*cfg.TTL) {
		return rep, ctx.Err()
	}
	rep.Leaderless = f.leaderless()
	rep.Violations = f.violations()
	return rep, nil
}

type fleet struct {
	cfg   Config
	rng   *rand.Rand
	hosts []*host
	etcd  *etcdtest.Cluster
	elect string // the shared directory of the file backend
}

func (f *fleet) records() string { return filepath.Join(f.cfg.Root, "records") }

func (f *fleet) plugins() []string {
	var ps []string
	for i := range f.cfg.Plugins {
		ps = append(ps, fmt.Sprintf("p%d", i+1))
	}
	return ps
}

// settleWait bounds the wait for every plugin to have a leader: a ttl for
// the lease to run out, the stop window, a loaded machine's slack, and
// time for a large fleet's campaigns after an outage.
func (f *fleet) settleWait() time.Duration {
	return 2*f.cfg.TTL + 15*time.Second + time.Duration(f.cfg.Hosts*f.cfg.Plugins)*20*time.Millisecond
}

func (f *fleet) setUp() error {
	for _, d := range []string{"records", "locks", "elect"} {
		if err := os.MkdirAll(filepath.Join(f.cfg.Root, d), 0o755); err != nil {
			return err
		}
	}
	f.elect = filepath.Join(f.cfg.Root, "elect")
	if f.cfg.Backend == Etcd {
		c, err := etcdtest.LaunchCluster(filepath.Join(f.cfg.Root, "etcd"), 3)
		if err != nil {
			return err
		}
		f.etcd = c
	}
	for i := range f.cfg.Hosts {
		h := &host{f: f, id: fmt.Sprintf("h%d", i+1), dir: filepath.Join(f.cfg.Root, fmt.Sprintf("h%d", i+1))}
		if err := os.MkdirAll(h.dir, 0o755); err != nil {
			return err
		}
		if f.etcd != nil {
			for _, ep := range f.etcd.Endpoints() {
				p, err := faultproxy.Start(strings.TrimPrefix(ep, "http://"))
				if err != nil {
					return err
				}
				h.proxies = append(h.proxies, p)
			}
		}
		if err := os.WriteFile(h.file(), []byte(f.spec(h, i)), 0o644); err != nil {
			return err
		}
		f.hosts = append(f.hosts, h)
	}
	// Start the hosts a few at a time, as machines of a fleet come up.
	return parallel(f.hosts, 4, (*host).start)
}

// spec is the plugins file of host h, the i-th.
func (f *fleet) spec(h *host, i int) string {
	var b strings.Builder
	b.WriteString("name: fleet\nplugins:\n")
	addr := fmt.Sprintf("127.0.0.1:%d", 20000+i)
	var elect string
	if f.etcd != nil {
		var eps []string
		for _, p := range h.proxies {
			eps = append(eps, fmt.Sprintf("%q", "http://"+p.Addr()))
		}
		elect = fmt.Sprintf("{address: %q, renew: %d millis, etcd: {endpoints: [%s], prefix: /fleet/, sessionTTL: %d seconds}}",
			addr, f.cfg.Renew.Milliseconds(), strings.Join(eps, ", "), int(f.cfg.TTL.Seconds()))
	} else {
		elect = fmt.Sprintf("{dir: %q, address: %q, ttl: %d millis, renew: %d millis, poll: %d millis, lockStale: %d millis}",
			f.elect, addr, f.cfg.TTL.Milliseconds(), f.cfg.Renew.Milliseconds(), f.cfg.Poll.Milliseconds(), f.cfg.LockStale.Milliseconds())
	}
	for _, p := range f.plugins() {
		var cmd []string
		for _, a := range append(slices.Clone(f.cfg.Hold), f.cfg.Root, p, h.id) {
			cmd = append(cmd, fmt.Sprintf("%q", a))
		}
		fmt.Fprintf(&b, "  %s:\n    run: floating\n    command: [%s]\n    elect: %s\n", p, strings.Join(cmd, ", "), elect)
	}
	return b.String()
}

// inject makes one fault of kind k, waits it out and heals it.
func (f *fleet) inject(ctx context.Context, k Kind) (Fault, error) {
	fault := Fault{Kind: k, At: time.Now()}
	past := f.cfg.TTL + 2*time.Second
	switch k {
	case KillHost, FreezeHost, Partition:
		h := f.leading()
		if h == nil {
			// The fleet has not recovered from the fault before: give it
			// another while.
			if err := f.settle(ctx, f.settleWait()); err != nil {
				f.cfg.Logf("fleet: %v", err)
			}
			if h = f.leading(); h == nil {
				return fault, errors.New("no host leads a plugin")
			}
		}
		fault.At = time.Now()
		fault.Target = h.id
		switch k {
		case KillHost:
			h.signal(syscall.SIGKILL)
			h.wait()
			// It comes back once others lead its plugins, as a machine
			// that died does: a host started again at once on its state dir
			// would take back at once a lease file naming it, knowing its
			// holder dead, which is not a failover.
			if err := f.settle(ctx, f.settleWait()); err != nil {
				f.cfg.Logf("fleet: after %s on %s: %v", k, h.id, err)
			}
			if err := h.start(); err != nil {
				return fault, err
			}
		case FreezeHost:
			h.signal(syscall.SIGSTOP)
			sleep(ctx, past)
			h.signal(syscall.SIGCONT)
		case Partition:
			for _, p := range h.proxies {
				p.Dark()
			}
			sleep(ctx, past)
			for _, p := range h.proxies {
				p.Light()
			}
		}
	case KillMember, KillLeader:
		leader, err := f.etcd.Leader()
		if err != nil {
			return fault, err
		}
		i := leader
		if k == KillMember {
			i = (leader + 1 + f.rng.IntN(len(f.etcd.Members)-1)) % len(f.etcd.Members)
		}
		fault.Target = fmt.Sprintf("member m%d", i+1)
		fault.At = time.Now()
		f.etcd.Members[i].Kill()
		sleep(ctx, 2*time.Second)
		if err := f.etcd.Start(); err != nil {
			return fault, err
		}
	case StopCluster:
		fault.Target = "every member"
		f.etcd.Stop()
		sleep(ctx, past)
		if err := f.etcd.Start(); err != nil {
			return fault, err
		}
	case ReadOnly:
		fault.Target = "the election directory"
		undo, err := fsfault.MakeImmutable(f.elect)
		if err != nil {
			undo, err = fsfault.MakeReadOnly(f.elect)
		}
		if err != nil {
			return fault, err
		}
		sleep(ctx, past)
		if err := undo(); err != nil {
			return fault, err
		}
	}
	return fault, nil
}

// leading picks at random a host that leads at least one plugin now.
func (f *fleet) leading() *host {
	byID := map[string]*host{}
	for _, h := range f.hosts {
		byID[h.id] = h
	}
	var ids []string
	for _, l := range f.leaders(time.Now()) {
		if l.live && !slices.Contains(ids, l.host) {
			ids = append(ids, l.host)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	return byID[ids[f.rng.IntN(len(ids))]]
}

// account works out what fault did from the records: which plugins lost
// their leader, how soon each had the next, and the epoch changes beyond
// those.
func (f *fleet) account(fault *Fault) {
	before := f.leaders(fault.At)
	for _, p := range f.plugins() {
		recs := readRecords(f.records(), p)
		var changes int
		var first time.Time
		last := before[p].epoch
		for _, r := range recs {
			if r.what != "start" || !r.at.After(fault.At) || r.epoch == last {
				continue
			}
			changes++
			last = r.epoch
			if first.IsZero() {
				first = r.at
			}
		}
		hostFault := fault.Kind == KillHost || fault.Kind == FreezeHost || fault.Kind == Partition
		touched := !hostFault || before[p].host == fault.Target
		switch {
		case changes == 0:
		case !touched:
			fault.Extra += changes
		default:
			fault.Lost++
			fault.Failovers = append(fault.Failovers, first.Sub(fault.At))
			fault.Extra += changes - 1
		}
	}
}

// measure takes the steady window's load: etcd's requests and each
// host's CPU and memory.
func (f *fleet) measure(ctx context.Context, rep *Report) {
	window := f.cfg.Steady
	if window <= 0 {
		return
	}
	etcd0, etcdCPU0, term := f.etcdRequests(), f.etcdCPU(), f.etcdTerm()
	cpu0 := make([]time.Duration, len(f.hosts))
	for i, h := range f.hosts {
		cpu0[i], _ = h.usage()
	}
	start := time.Now()
	sleep(ctx, window)
	took := time.Since(start)
	if f.etcd != nil {
		rep.EtcdPerHost = (f.etcdRequests() - etcd0) / took.Seconds() / float64(len(f.hosts))
		rep.EtcdCPU = float64(f.etcdCPU()-etcdCPU0) / float64(took)
		rep.EtcdElections = int(f.etcdTerm() - term)
	}
	for i, h := range f.hosts {
		cpu, rss := h.usage()
		rep.CPU = append(rep.CPU, float64(cpu-cpu0[i])/float64(took))
		rep.RSS = append(rep.RSS, rss)
	}
}

func (f *fleet) etcdRequests() float64 {
	if f.etcd == nil {
		return 0
	}
	var n float64
	for _, m := range f.etcd.Members {
		n += m.Metric("grpc_server_msg_received_total")
	}
	return n
}

// etcdTerm is the raft term of the etcd cluster now (etcdtest.Cluster.Term),
// 0 on the file backend.
func (f *fleet) etcdTerm() uint64 {
	if f.etcd == nil {
		return 0
	}
	return f.etcd.Term()
}

func (f *fleet) etcdCPU() time.Duration {
	if f.etcd == nil {
		return 0
	}
	var cpu time.Duration
	for _, m := range f.etcd.Members {
		c, _ := processUsage(m.PID())
		cpu += c
	}
	return cpu
}

// close stops every host (each stops its plugins), then etcd and the
// proxies.
func (f *fleet) close() error {
	var errs []string
	for _, h := range f.hosts {
		h.signal(syscall.SIGCONT)
		if err := h.stop(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, h := range f.hosts {
		for _, p := range h.proxies {
			p.Close()
		}
	}
	if f.etcd != nil {
		f.etcd.Stop()
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// parallel runs fn on each of xs, n at a time, and returns the first
// error.
func parallel[T any](xs []T, n int, fn func(T) error) error {
	sem := make(chan struct{}, n)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for _, x := range xs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(x); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// sleep waits d, or until ctx ends: false then.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// host is one graft host of the fleet.
type host struct {
	f       *fleet
	id, dir string
	proxies []*faultproxy.Proxy

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

func (h *host) file() string  { return filepath.Join(h.dir, "plugins.yaml") }
func (h *host) state() string { return filepath.Join(h.dir, ".graft") }

// start runs the host, waits until it answers, and applies its file,
// which returns once each plugin's leader is known.
func (h *host) start() error {
	cmd := exec.Command(h.f.cfg.Graft, "--file", h.file(), "host", "--host-id", h.id)
	cmd.Env = append(append(os.Environ(), h.f.cfg.Env...), "NO_COLOR=1")
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
	h.cmd, h.exited = cmd, exited
	h.mu.Unlock()
	c, err := hostapi.NewClient(h.state())
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for c.Ping(context.Background(), time.Second) != nil {
		select {
		case <-exited:
			return fmt.Errorf("host %s exited at start (its log: %s)", h.id, filepath.Join(h.dir, "host.stderr"))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("host %s does not answer", h.id)
		}
		time.Sleep(20 * time.Millisecond)
	}
	apply := exec.Command(h.f.cfg.Graft, "--file", h.file(), "apply")
	apply.Env = cmd.Env
	if out, err := apply.CombinedOutput(); err != nil {
		return fmt.Errorf("apply on %s: %w: %s", h.id, err, out)
	}
	return nil
}

func (h *host) signal(sig syscall.Signal) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd != nil {
		h.cmd.Process.Signal(sig)
	}
}

func (h *host) wait() {
	h.mu.Lock()
	exited := h.exited
	h.mu.Unlock()
	if exited != nil {
		<-exited
	}
}

// stop ends the host with SIGTERM, which stops its plugins first, and
// kills it when it takes longer than a stop's windows allow.
func (h *host) stop() error {
	h.mu.Lock()
	cmd, exited := h.cmd, h.exited
	h.mu.Unlock()
	if cmd == nil {
		return nil
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return nil
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("host %s did not stop within 30s of SIGTERM", h.id)
	}
}

// usage is the CPU time the host's process used so far, and its resident
// memory now.
func (h *host) usage() (cpu time.Duration, rss int64) {
	h.mu.Lock()
	cmd := h.cmd
	h.mu.Unlock()
	if cmd == nil {
		return 0, 0
	}
	return processUsage(cmd.Process.Pid)
}
