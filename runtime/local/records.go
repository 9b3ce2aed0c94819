package local

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/graftland/graft/instance"
	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/runtime"
)

// EnvInvocation is set in a local plugin's environment to an id unique to
// that start (instance.EnvInvocation). The instance id is not enough to
// find leftovers by: a floating plugin's is its instance name, the same
// on every host of the machine that runs it.
const EnvInvocation = instance.EnvInvocation

// startRecorded is Start of req, carrying invocation id inv, recorded
// in Options.Records first, before the process exists and so before its
// ready check; the record is removed once the process is gone, or at once
// when its start fails (which leaves nothing running).
func (l *Local) startRecorded(ctx context.Context, req runtime.Request, inv string) (runtime.Handle, error) {
	path := filepath.Join(l.opt.Records, inv)
	f, err := safefs.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start %s: record it in the state dir first: %w", req.Name, err)
	}
	f.Close()
	h, err := l.start(ctx, req)
	if err != nil {
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
