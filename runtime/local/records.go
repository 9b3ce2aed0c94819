package local

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/runtime"
)

// EnvInvocation is set in a local plugin's environment to an id unique to
// that start, like systemd's INVOCATION_ID: a daemon started again finds
// by it what a previous one left running, the processes that left their
// process group included. The instance id is not enough to find leftovers
// by: a floating plugin's is its instance name, the same on every host of
// the machine that runs it.
const EnvInvocation = "GRAFT_INVOCATION_ID"

// Start starts the plugin's command in its own process group with its env
// and graft's identity variables, and returns once the program runs and,
// if it has a ready check, is ready. See runtime.Placement.
//
// With Options.Records set, the process carries a fresh invocation id in
// its environment (EnvInvocation); and, where plugins run outside a PID
// namespace of the daemon's own, the start is recorded there first,
// before the process exists and so before its ready check, and the record
// is removed once the process is gone. A daemon killed outright, even
// during a ready check, leaves its records behind, and the next one finds
// by them what its plugins left running: what left a plugin's process
// group, or was its child. In the daemon's namespace nothing can be left
// (the kernel kills the namespace with the daemon), so nothing is
// recorded: a record would cost a file per start and find nothing.
func (l *Local) Start(ctx context.Context, req runtime.Request) (runtime.Handle, error) {
	if l.opt.Records == "" {
		return l.start(ctx, req)
	}
	inv := uuid.NewString()
	env := maps.Clone(req.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[EnvInvocation] = inv
	req.Env = env
	if l.Isolation().Namespace {
		return l.start(ctx, req)
	}
	path := filepath.Join(l.opt.Records, inv)
	f, err := safefs.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start %s: record it in the state dir first: %w", req.Name, err)
	}
	f.Close()
	h, err := l.start(ctx, req)
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

// StopLeftovers stops what a daemon killed outright left running of the
// plugins it recorded in dir (Options.Records): SIGTERM, then SIGKILL a
// second later; then it removes the records. Call it before starting
// anything, so that nothing of the old run overlaps the new. daemon
// names the daemon in the log: "host".
func StopLeftovers(dir, daemon string, log *slog.Logger) {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return
	}
	var marks []string
	for _, e := range ents {
		// Only a record Start made: a uuid, for a mark no other
		// process's environment holds by chance.
		if _, err := uuid.Parse(e.Name()); err == nil && len(e.Name()) == 36 {
			marks = append(marks, EnvInvocation+"="+e.Name())
		}
	}
	left, err := proc.Marked(marks)
	if err != nil {
		log.Warn("look for what a previous "+daemon+" left running", "err", err)
	}
	if len(left) > 0 {
		log.Warn("stopping what a previous "+daemon+" left running", "processes", len(left))
		// One that survives SIGKILL is waited for no longer: its record
		// goes all the same.
		LeftoverLadder(left, time.Second).Run()
	}
	for _, e := range ents {
		os.Remove(filepath.Join(dir, e.Name()))
	}
}
