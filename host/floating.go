package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/placement"
	"github.com/graftland/graft/spec"
)

// floater keeps a floating plugin (docs/semantics.md, "Floating plugins:
// the election"): it campaigns in the plugin's election and, while this
// host leads, runs the plugin as a local process with the instance name and
// the epoch as its identity, restarting it if it dies. A leader that loses
// its term stops the process first, then campaigns again. On every host it
// watches who leads, so consumers can be pointed at the leader and
// restarted when it changes.
type floater struct {
	h   *Host
	req placement.Request

	ctx    context.Context // the floater's life: cancelled by Stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	el       *elect.Election
	addr     string // where this host's plugin serves, when it leads
	stopping bool
	leading  bool
	sup      *placement.Supervisor // the plugin, while leading
	leader   elect.Lease           // who leads, as last seen
	known    chan struct{}         // closed once a leader is known
	since    time.Time
	ended    chan struct{} // closed when the campaign cannot go on; then:
	why      error         // why (an *elect.ExhaustedError)
}

func newFloater(h *Host, req placement.Request) *floater {
	ctx, cancel := context.WithCancel(context.Background())
	return &floater{h: h, req: req, ctx: ctx, cancel: cancel, known: make(chan struct{}), ended: make(chan struct{}), since: time.Now()}
}

// Start joins the election and returns once some host leads, this one or
// another: consumers need the leader's address. It waits at most ttl plus
// poll, the longest a healthy election takes to show a leader; the
// campaign goes on after an error. Cancelling ctx ends the wait, not the
// campaign.
func (f *floater) Start(ctx context.Context) error {
	p := f.req.Plugin
	e := p.Elect
	addr := e.Address
	if addr == "" {
		addr = net.JoinHostPort(localAddress(), strconv.Itoa(e.Port))
	}
	el, err := elect.New(elect.Config{
		Dir: electDir(f.req.Dir, e), Instance: p.Instance, HostID: f.h.hostID, Address: addr,
		TTL: e.TTL.Std(), Renew: e.Renew.Std(), Poll: e.Poll.Std(), LockStale: e.LockStale.Std(),
		Clock: f.h.clock,
	})
	if err != nil {
		return fmt.Errorf("start %s: join the election: %w", p.Name, err)
	}
	f.mu.Lock()
	f.el, f.addr = el, addr
	f.mu.Unlock()
	f.wg.Add(2)
	go f.campaign(el)
	go f.observe(el)
	wait := time.NewTimer(e.TTL.Std() + e.Poll.Std())
	defer wait.Stop()
	select {
	case <-f.known:
		return nil
	case <-f.ended:
		return fmt.Errorf("start %s: %w", p.Name, f.why)
	case <-wait.C:
		return fmt.Errorf("start %s: no leader elected in %s within %s: is the directory readable and writable on every host?", p.Name, e.Dir, e.TTL.Std()+e.Poll.Std())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// campaign leads when it can: it runs the plugin while leading, and stops
// it first when the term is lost or the floater stops.
func (f *floater) campaign(el *elect.Election) {
	defer f.wg.Done()
	for {
		term, err := el.Campaign(f.ctx)
		if err != nil {
			if f.ctx.Err() == nil { // not stopped: it cannot go on
				f.h.log.Error("the election cannot go on", "plugin", f.req.Plugin.Name, "err", err)
				f.mu.Lock()
				f.why = err
				f.mu.Unlock()
				close(f.ended)
			}
			return
		}
		f.lead(term)
		select {
		case <-term.Lost():
			f.h.log.Warn("lost the lead: stopping the plugin first", "plugin", f.req.Plugin.Name, "epoch", term.Epoch(), "err", term.Err())
			f.follow()
		case <-f.ctx.Done():
			f.follow()
			if err := term.Resign(context.Background()); err != nil {
				f.h.log.Warn("release the lease", "plugin", f.req.Plugin.Name, "err", err)
			}
			return
		}
	}
}

// lead starts the plugin with the epoch as its generation. It is started
// again whenever it dies: the plugin's retry, or a second's delay and
// backoff when it has none.
func (f *floater) lead(term *elect.Term) {
	req := f.req
	p := *req.Plugin
	if p.Retry == nil {
		p.Retry = &spec.Retry{Delay: spec.FromStd(time.Second), Factor: 2, Max: spec.FromStd(30 * time.Second)}
	}
	req.Plugin = &p
	req.Identity = &placement.Identity{ID: p.Instance, Generation: term.Epoch()}
	sup := placement.NewSupervisor(f.h.locals, req)
	f.mu.Lock()
	if f.stopping {
		f.mu.Unlock()
		return
	}
	f.leading, f.sup, f.since = true, sup, time.Now()
	f.mu.Unlock()
	f.h.log.Info("leading", "plugin", p.Name, "epoch", term.Epoch())
	if err := sup.Start(f.ctx); err != nil {
		f.h.log.Error("start the plugin as leader", "plugin", p.Name, "err", err)
	}
	f.saw(elect.Lease{Holder: f.h.hostID, Address: f.addr, Epoch: term.Epoch()})
}

// follow stops the plugin, if it runs here.
func (f *floater) follow() {
	f.mu.Lock()
	sup := f.sup
	f.leading, f.sup, f.since = false, nil, time.Now()
	f.mu.Unlock()
	if sup != nil {
		sup.Stop(context.Background())
	}
}

// observe follows the lease, to learn of every change of leader.
func (f *floater) observe(el *elect.Election) {
	defer f.wg.Done()
	for o := range el.Observe(f.ctx) {
		if !o.Dead {
			f.saw(o.Lease)
		}
	}
}

// saw notes who leads. A new leader, or a new address, restarts this
// host's consumers so they connect to it.
func (f *floater) saw(l elect.Lease) {
	f.mu.Lock()
	if l.Epoch < f.leader.Epoch {
		f.mu.Unlock()
		return // an old lease, read late
	}
	changed := l.Epoch != f.leader.Epoch || l.Address != f.leader.Address
	f.leader = l
	select {
	case <-f.known:
	default:
		close(f.known)
	}
	f.mu.Unlock()
	if changed {
		f.h.leaderChanged(f.req.Plugin.Name, l)
	}
}

// Stop leaves the election: a leader stops the plugin, then marks the
// lease released so another host takes over within one poll.
func (f *floater) Stop(ctx context.Context) (placement.Outcome, error) {
	f.mu.Lock()
	f.stopping = true
	sup := f.sup
	f.mu.Unlock()
	outcome, err := placement.Exited, error(nil)
	if sup != nil {
		outcome, err = sup.Stop(ctx)
	}
	f.cancel()
	f.wg.Wait()
	f.mu.Lock()
	el := f.el
	f.mu.Unlock()
	if el != nil {
		el.Close()
	}
	return outcome, err
}

// State is the plugin's state on this host: its process's while leading,
// standby while another host leads.
func (f *floater) State() placement.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sup != nil {
		return f.sup.State()
	}
	if f.why != nil { // the campaign ended: no host leads, nor can
		return placement.State{Status: placement.Failed, Since: f.since, LastError: f.why.Error()}
	}
	st := placement.State{Status: placement.Standby, Since: f.since}
	if f.leader.Epoch > 0 {
		st.Identity = placement.Identity{ID: f.req.Plugin.Instance, Generation: f.leader.Epoch}
	} else {
		st.Status = placement.Starting
	}
	return st
}

// role is "leader", "follower" (of a healthy leader), or "candidate"
// (bootstrapping, contending or backing off), and the leader's address.
func (f *floater) role() (string, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.leading:
		return "leader", f.leader.Address
	case f.el != nil && f.el.Following():
		return "follower", f.leader.Address
	}
	return "candidate", f.leader.Address
}

// lease reads the election's lease: who leads, where, which epoch, and how
// long its file has looked unchanged to this host.
func (f *floater) lease(ctx context.Context) (elect.Lease, time.Duration, error) {
	f.mu.Lock()
	el := f.el
	f.mu.Unlock()
	if el == nil {
		return elect.Lease{}, 0, fmt.Errorf("%s has not joined its election", f.req.Plugin.Name)
	}
	return el.Leader(ctx)
}

// Leader is the lease of floating plugin name as this host sees it.
func (h *Host) Leader(ctx context.Context, name string) (hostapi.LeaderInfo, error) {
	if err := checkName(name); err != nil {
		return hostapi.LeaderInfo{}, err
	}
	e := h.entry(name)
	if e == nil {
		return hostapi.LeaderInfo{}, &NotFoundError{What: fmt.Sprintf("plugin %q does not run on this host", name)}
	}
	f, ok := e.unit.(*floater)
	if !ok {
		return hostapi.LeaderInfo{}, &NotFoundError{What: fmt.Sprintf("plugin %q is not floating (run: %s): it has no leader", name, e.record.Run)}
	}
	l, age, err := f.lease(ctx)
	if err != nil {
		return hostapi.LeaderInfo{}, err
	}
	role, _ := f.role()
	p := f.req.Plugin
	return hostapi.LeaderInfo{
		Plugin: name, Instance: p.Instance, Dir: electDir(f.req.Dir, p.Elect),
		Holder: l.Holder, Address: l.Address, Epoch: l.Epoch, RenewCount: l.RenewCount, Released: l.Released,
		AgeMillis: age.Milliseconds(), TTLMillis: p.Elect.TTL.Std().Milliseconds(),
		Role: role, HostID: h.hostID,
	}, nil
}

func (h *Host) serveLeader(w http.ResponseWriter, r *http.Request) {
	info, err := h.Leader(r.Context(), r.PathValue("plugin"))
	if err != nil {
		writeError(w, statusFor(err), hostapi.Encode(err))
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// electDir is the election's directory: elect.dir, relative to the spec's
// directory specDir.
func electDir(specDir string, e *spec.Elect) string {
	if filepath.IsAbs(e.Dir) {
		return e.Dir
	}
	return filepath.Join(specDir, e.Dir)
}

// localAddress is this machine's address for others to reach: the first
// non-loopback IPv4 address, else loopback.
func localAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && !ip.IP.IsLoopback() && ip.IP.To4() != nil {
			return ip.IP.String()
		}
	}
	return "127.0.0.1"
}

// addrVar is the environment variable that gives consumers the address of
// floating plugin name: GRAFT_ADDR_ and the name in upper case, with
// '-' as '_'.
func addrVar(name string) string {
	return "GRAFT_ADDR_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// providerEnv is what the host adds to a plugin's environment: the
// address of each floating plugin it uses. h.mu is held.
func (h *Host) providerEnv(desired *spec.Spec, p *spec.Plugin) map[string]string {
	env := map[string]string{}
	for _, u := range p.Uses {
		if desired.Plugins[u] == nil || desired.Plugins[u].Run != spec.Floating {
			continue
		}
		if e := h.plugins[u]; e != nil {
			if f, ok := e.unit.(*floater); ok {
				_, env[addrVar(u)] = f.role()
			}
		}
	}
	return env
}

// leaderChanged restarts, on this host, the consumers of a floating
// plugin whose leader moved, so they connect to the new one. It runs as
// a restart of the last applied spec, planned like any, after whatever
// apply is under way; consumers already started with the new address are
// left alone.
func (h *Host) leaderChanged(name string, lease elect.Lease) {
	h.log.Info("leader", "plugin", name, "holder", lease.Holder, "address", lease.Address, "epoch", lease.Epoch)
	var consumers []string
	h.mu.Lock()
	for c, e := range h.plugins {
		if got, ok := e.env[addrVar(name)]; ok && got != lease.Address {
			consumers = append(consumers, c)
		}
	}
	h.mu.Unlock()
	if len(consumers) == 0 {
		return
	}
	slices.Sort(consumers)
	h.background.Go(func(ctx context.Context) {
		req := hostapi.ApplyRequest{Restart: consumers, Holder: "a restart for the new leader of " + name, LockWait: (24 * time.Hour).Milliseconds()}
		if err := h.Restart(ctx, req, nil); err != nil && ctx.Err() == nil {
			h.log.Error("restart consumers for the new leader", "plugin", name, "consumers", consumers, "err", err)
		}
	})
}

// hostIDFile keeps the part of the host id that tells two hosts of one
// machine apart.
const hostIDFile = "host-id"

// defaultHostID is the hostname and an id kept in the state dir, made
// the first time (or when the file holds no id: a write a crash cut
// short), and only then written.
func defaultHostID(dir string) (string, error) {
	name, _ := os.Hostname()
	path := filepath.Join(dir, hostIDFile)
	b, err := safefs.ReadFile(path, 64)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if err != nil || !validHostID(id) {
		id = uuid.NewString()[:8]
		if err := atomicfile.Write(path, []byte(id+"\n"), 0o600); err != nil {
			return "", err
		}
	}
	return name + "-" + id, nil
}

// validHostID reports whether id is one defaultHostID could have made.
func validHostID(id string) bool {
	if id == "" {
		return false
	}
	for _, c := range id {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
