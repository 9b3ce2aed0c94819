package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/contentdigest"
	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/floating"
)

// An upgrade replaces the host's program in place (docs/upgrade.md): the
// host checks that the new program can take over its state dir (it runs
// it as `graft host --preflight`), takes the apply lock, has the runner
// embedded in it hand its processes over (runner.Handover), stops the
// plugins that cannot outlive it (workers, which run inside it; floating
// plugins it follows), records the terms it leads, tells the init of its
// namespace to keep every local process for the next host, freezes its
// copying of their output, and executes the new program with its own
// arguments, in its own process: its pid, and systemd's hold on it, stay.
// Its sessions with runners are left open. The new program adopts the
// local plugins as after a crash (adopt.go), resumes those sessions
// (resume.go), and starts again what was stopped.

// upgradeHold is how long the init keeps the plugins for the new program
// at least: it attaches within milliseconds.
const upgradeHold = 30 * time.Second

// preflightWait bounds the new program's check of the state dir.
const preflightWait = 30 * time.Second

// UpgradeRequest asks the host to replace its program.
type UpgradeRequest struct {
	// Binary is the new program; empty: the path this host's program was
	// started from (which a package upgrade has replaced).
	Binary string
	// LockWait is how long to wait for an apply under way; 0 waits as long
	// as ctx lasts.
	LockWait time.Duration
	Holder   string
}

// Preflight is what a new program checks of a state dir before a host
// executes it (`graft host --preflight`): that it can be trusted, is of a
// format it keeps, and its last applied spec read.
func Preflight(dir, version string) error {
	if err := validateStateDir(dir); err != nil {
		return err
	}
	if err := statedir.CheckStamp(dir, statedir.Format{Format: statedir.HostFormat, Version: version}); err != nil {
		return err
	}
	_, err := loadApplied(dir, contentdigest.New(filepath.Join(dir, digestsDir)))
	return err
}

// PreflightAnswer is what `graft host --preflight` prints: the new
// program's version.
type PreflightAnswer struct {
	Version string `json:"version"`
}

// Upgrade prepares the host's replacement by req.Binary and returns what
// it will do, with the function that carries it out, which the server
// calls once it has answered: it executes the new program, and returns
// only if that failed (the host then goes on as before, and starts again
// what it stopped). A program that fails its preflight leaves the host as
// it was.
func (h *Host) Upgrade(ctx context.Context, req UpgradeRequest) (*hostapi.UpgradeReport, func() error, error) {
	if h.opt.Exec == nil {
		return nil, nil, errors.New("this host cannot execute another program")
	}
	bin, err := upgradeBinary(req.Binary)
	if err != nil {
		return nil, nil, err
	}
	to, err := preflight(ctx, bin, h.dir)
	if err != nil {
		return nil, nil, err
	}
	wait := req.LockWait
	if wait <= 0 {
		wait = forever
	}
	if err := h.lockApply(ctx, ApplyRequest{Holder: req.Holder, LockWait: wait}, false); err != nil {
		return nil, nil, err
	}
	report := &hostapi.UpgradeReport{PID: os.Getpid(), From: h.opt.Version, To: to, Binary: bin}
	keep := h.local.Isolation().Namespace && h.hand.Socket != ""
	if keep {
		if err := h.local.Hold(max(h.opt.AdoptWindow, upgradeHold)); err != nil {
			h.log.Warn("the namespace's init cannot hold the plugins: they restart", "err", err)
			keep = false
		}
	}
	if !keep {
		report.Why = "local plugins run outside a PID namespace whose init can outlive the host"
		if err := h.local.Isolation().Err; err != nil {
			report.Why += ": " + err.Error()
		}
	}
	// The runner embedded in the host hands its processes, and the
	// host's session with it, over to the new program's.
	undoRunner, err := h.runners.Handover(max(h.opt.AdoptWindow, upgradeHold))
	embedded := err == nil
	if err != nil {
		h.log.Warn("the embedded runner cannot hand its processes over: its plugins restart", "err", err)
		undoRunner = func() {}
	}
	h.mu.Lock()
	var stop []string
	for name, e := range h.plugins {
		if e.placement == nil || e.supervisor.State().Status == runtime.Completed {
			continue
		}
		// Local plugins are kept by the init of the namespace; those of
		// a runner, by the runner, under the session the new program
		// resumes (resume.go).
		if keep && e.placement == runtime.Placement(h.local) || h.runners.Separate(e.placement) ||
			embedded && h.runners.Has(e.placement) ||
			keep && e.placement == runtime.Placement(h.floating) && e.supervisor.State().Role == string(floating.Leading) {
			report.Kept = append(report.Kept, name)
			continue
		}
		stop = append(stop, name)
	}
	h.mu.Unlock()
	sort.Strings(report.Kept)
	sort.Strings(stop)
	report.Restarted = stop
	for _, name := range stop {
		if e := h.entry(name); e != nil {
			h.stop(context.WithoutCancel(ctx), name, e)
		}
	}
	h.log.Info("upgrading: executing the new program", "binary", bin, "from", report.From, "to", to, "kept", len(report.Kept), "restarted", stop)
	run := func() error {
		h.local.Freeze()
		// The terms this host leads, as late as can be: the new program
		// takes them back within the ttl of their last renewal.
		err := h.recordTerms()
		// The sockets held for the local plugins, for the new program.
		undoSockets := func() {}
		if err == nil {
			undoSockets, err = h.local.HandSockets()
		}
		if err == nil {
			err = h.opt.Exec(bin)
			undoSockets()
		}
		os.Remove(filepath.Join(h.dir, statedir.Terms))
		// Still here: the exec failed. The host goes on.
		undoRunner()
		h.local.Thaw()
		h.local.Unhold(h.opt.AdoptWindow)
		h.log.Error("upgrade: the new program could not be executed; this one goes on", "binary", bin, "err", err)
		h.unlockApply()
		h.background.Go(func(ctx context.Context) {
			if err := h.Reapply(ctx); err != nil {
				h.log.Error("apply the last applied spec", "err", err)
			}
		})
		return err
	}
	return report, run, nil
}

// upgradeBinary is the program an upgrade executes: bin, else this
// program's path; a regular file that can be executed.
func upgradeBinary(bin string) (string, error) {
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("the path of this host's program: %w", err)
		}
		bin = exe
	}
	bin, err := filepath.Abs(bin)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return "", fmt.Errorf("the new program: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("the new program %s is not an executable file", bin)
	}
	return bin, nil
}

// preflight runs bin's check of the state dir, and returns its version.
func preflight(ctx context.Context, bin, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, preflightWait)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "host", "--preflight", "--state-dir", dir)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := proc.Run(cmd) // beside the host's Reaper
	var a PreflightAnswer
	if err == nil {
		if jerr := json.Unmarshal(out.Bytes(), &a); jerr != nil || a.Version == "" {
			err = fmt.Errorf("it answered %q, not its version", strings.TrimSpace(out.String()))
		}
	}
	if err != nil {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", &hostapi.UpgradeRefusedError{Binary: bin, Why: msg}
	}
	return a.Version, nil
}
