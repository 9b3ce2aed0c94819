package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/instance"
	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/spec"
)

// Leader is the lease of floating plugin name as this host sees it.
func (h *Host) Leader(ctx context.Context, name string) (hostapi.LeaderInfo, error) {
	if err := ValidateName(name); err != nil {
		return hostapi.LeaderInfo{}, err
	}
	e := h.entry(name)
	if e == nil {
		return hostapi.LeaderInfo{}, &NotFoundError{What: fmt.Sprintf("plugin %q does not run on this host", name)}
	}
	if !e.record.Run.Traits().Elect {
		return hostapi.LeaderInfo{}, &NotFoundError{What: fmt.Sprintf("plugin %q is not floating (run: %s): it has no leader", name, e.record.Run)}
	}
	l, err := h.floating.Leader(ctx, name)
	if err != nil {
		return hostapi.LeaderInfo{}, err
	}
	return hostapi.LeaderInfo{
		Plugin: name, Instance: l.Instance, Backend: l.Backend, Dir: l.Dir, Endpoints: l.Endpoints, Key: l.Key,
		Holder: l.Holder, Address: l.Address, Epoch: l.Epoch, RenewCount: l.RenewCount, Released: l.Released,
		AgeMillis: l.Age.Milliseconds(), TTLMillis: l.TTL.Milliseconds(),
		Role: string(l.Role), HostID: h.hostID,
	}, nil
}

// providerEnv is what the host adds to a plugin's environment: the
// address of each floating plugin it uses, and the epoch of the leader
// there. h.mu is held.
func (h *Host) providerEnv(desired *spec.Spec, p *spec.Plugin) map[string]string {
	env := map[string]string{}
	for _, u := range p.Uses {
		if desired.Plugins[u] == nil || !desired.Plugins[u].Run.Traits().Elect {
			continue
		}
		if e := h.plugins[u]; e != nil {
			st := e.supervisor.State()
			env[instance.EnvAddr(u)] = st.Address
			env[instance.EnvEpoch(u)] = strconv.FormatInt(st.Epoch, 10)
		}
	}
	return env
}

// followLeaders restarts the consumers of each floating plugin whose
// leader changes, until the floating placement closes.
func (h *Host) followLeaders() {
	defer close(h.followed)
	for c := range h.floating.Changes() {
		h.changed.notify() // a role, an address
		h.leaderChanged(c.Plugin, c.Lease)
	}
}

// leaderChanged restarts, on this host, the consumers of a floating
// plugin that has a new leader (a new epoch) or a new address, so they
// connect to the new one, even at the same address: a host re-elected
// after a lost term, or hosts that all publish one virtual address, run
// a new process there (docs/semantics.md, "Floating plugins"). It runs
// as a restart of the last applied spec, planned like any, after
// whatever apply is under way; consumers already started with the new
// epoch and address are left alone.
func (h *Host) leaderChanged(name string, lease elect.Lease) {
	h.log.Info("leader", "plugin", name, "holder", lease.Holder, "address", lease.Address, "epoch", lease.Epoch)
	var consumers []string
	epoch := strconv.FormatInt(lease.Epoch, 10)
	h.mu.Lock()
	h.epochs[name] = lease.Epoch
	for c, e := range h.plugins {
		addr, ok := e.env[instance.EnvAddr(name)]
		if ok && (addr != lease.Address || e.env[instance.EnvEpoch(name)] != epoch) {
			consumers = append(consumers, c)
		}
	}
	h.mu.Unlock()
	if len(consumers) == 0 {
		return
	}
	slices.Sort(consumers)
	h.background.Go(func(ctx context.Context) {
		req := ApplyRequest{Restart: consumers, Holder: "a restart for the new leader of " + name, LockWait: 24 * time.Hour}
		if err := h.Restart(ctx, req, Report{}); err != nil && ctx.Err() == nil {
			h.log.Error("restart consumers for the new leader", "plugin", name, "consumers", consumers, "err", err)
		}
	})
}

// hostIDFile keeps the part of the host id that tells two hosts of one
// machine apart.
const hostIDFile = statedir.HostID

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
