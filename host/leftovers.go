package host

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/placement"
)

// instancesDir holds an empty file per local process the host started,
// named by its instance id, from its start until it is gone.
const instancesDir = "instances"

// recording is a placement that records the processes it starts in the
// state dir, before each starts: a host killed outright, even during a
// ready check, leaves the records behind, and the next host finds by them
// what is left of those plugins, through the invocation id in their
// environment. Where plugins run in PID namespaces of their own, nothing
// is left (the kernel killed each namespace with the host); elsewhere,
// what left the plugin's process group, or was its child, outlived it.
type recording struct {
	placement.Placement
	dir string
}

// EnvInvocation is set in a local plugin's environment to an id unique to
// that start, like systemd's INVOCATION_ID. The instance id is not enough
// to find leftovers by: a floating plugin's is its instance name, the same
// on every host of the machine that runs it.
const EnvInvocation = "GRAFT_INVOCATION_ID"

func (r recording) Start(ctx context.Context, req placement.Request) (placement.Handle, error) {
	inv := uuid.NewString()
	env := maps.Clone(req.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[EnvInvocation] = inv
	req.Env = env
	path := filepath.Join(r.dir, inv)
	f, err := safefs.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start %s: record it in the state dir first: %w", req.Plugin.Name, err)
	}
	f.Close()
	h, err := r.Placement.Start(ctx, req)
	if err != nil {
		// A failed start leaves nothing running.
		os.Remove(path)
		return nil, err
	}
	go func() {
		<-h.Done()
		os.Remove(path)
	}()
	return h, nil
}

// cleanLeftovers stops what a host killed outright left running of its
// plugins: SIGTERM, then SIGKILL a second later. It runs before the host
// starts anything, so nothing of the old run overlaps the new.
func (h *Host) cleanLeftovers() {
	dir := filepath.Join(h.dir, instancesDir)
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return
	}
	var marks []string
	for _, e := range ents {
		// Only a record the host made: a uuid, for a mark no other
		// process's environment holds by chance.
		if _, err := uuid.Parse(e.Name()); err == nil && len(e.Name()) == 36 {
			marks = append(marks, EnvInvocation+"="+e.Name())
		}
	}
	left, err := proc.Marked(marks)
	if err != nil {
		h.log.Warn("look for what a previous host left running", "err", err)
	}
	if len(left) > 0 {
		h.log.Warn("stopping what a previous host left running", "processes", len(left))
		signalAll(left, syscall.SIGTERM)
		if !proc.WaitMembers(left, after(time.Second)) {
			signalAll(left, syscall.SIGKILL)
			proc.WaitMembers(left, after(10*time.Second))
		}
	}
	for _, e := range ents {
		os.Remove(filepath.Join(dir, e.Name()))
	}
}

func signalAll(ms []proc.Member, sig syscall.Signal) {
	for _, m := range ms {
		m.Signal(sig)
	}
}

// after returns a channel closed after d.
func after(d time.Duration) <-chan struct{} {
	c := make(chan struct{})
	time.AfterFunc(d, func() { close(c) })
	return c
}
