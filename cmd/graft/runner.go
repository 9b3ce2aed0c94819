package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/skew"
	"github.com/graftland/graft/runner"
)

// RunnerCmd is `graft runner`: the daemon that runs remote plugins for
// hosts on other machines.
type RunnerCmd struct {
	Listen       string `required:"" placeholder:"tcp://HOST:PORT|unix://PATH" help:"Where hosts reach the runner: TCP (requires --token-file, loopback included; beyond loopback, --tls-cert and --tls-key, or --insecure-plaintext) or a unix socket (made mode 0600)."`
	Lease        string `default:"15 seconds" placeholder:"DURATION" help:"A session's lease when its host asks for none, such as \"15 seconds\"."`
	Grace        string `default:"5 seconds" placeholder:"DURATION" help:"From interrupting a process (SIGTERM) to killing it (SIGKILL), such as \"5 seconds\"."`
	TLSCert      string `name:"tls-cert" placeholder:"FILE" help:"Serve TLS with this certificate (PEM); needs --tls-key."`
	TLSKey       string `name:"tls-key" placeholder:"FILE" help:"The key of --tls-cert (PEM)."`
	ClientCA     string `name:"client-ca" placeholder:"FILE" help:"Require client certificates signed by these CAs (PEM); needs --tls-cert."`
	LogFormat    string `enum:"text,json" default:"text" help:"Format of the runner's log on stderr: text or json."`
	PIDNamespace string `name:"pid-namespace" enum:"auto,off" default:"auto" env:"GRAFT_PID_NAMESPACE" help:"auto: run processes in a PID namespace of the runner's own where the system allows it, so that nothing it starts outlives the runner; off: never."`
	Preflight    bool   `hidden:"" help:"Check that this program can take over the state dir and exit (a runner given SIGHUP runs it)."`
}

// Run serves until SIGTERM or SIGINT, then stops every process (interrupt,
// then kill after grace) and exits 0. On SIGHUP it executes its program
// again, from the path it was started from, in its process, handing its
// processes, sessions and listener over (upgrade).
func (c *RunnerCmd) Run(g *Globals) error {
	if g.StateDir == "" {
		return errors.New("graft runner needs a state dir: --state-dir DIR (or GRAFT_STATE_DIR)")
	}
	if c.Preflight {
		return runner.Preflight(g.StateDir, skew.Version())
	}
	lease, err := positiveDuration("--lease", c.Lease)
	if err != nil {
		return err
	}
	grace, err := positiveDuration("--grace", c.Grace)
	if err != nil {
		return err
	}
	var token string
	if g.TokenFile != "" {
		if token, err = hostapi.ReadToken(g.TokenFile); err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
	}
	network, _, err := runner.ParseListen(c.Listen, token)
	if err != nil {
		return err
	}
	tlsConf, err := c.tlsConfig(network)
	if err != nil {
		return err
	}
	listen := runner.ListenConfig{Addr: c.Listen, Token: token, TLS: tlsConf != nil, InsecurePlaintext: g.Plaintext}
	if _, _, err := listen.Validate(); err != nil {
		return err
	}

	var handler slog.Handler = slog.NewTextHandler(g.stderr, nil)
	if c.LogFormat == "json" {
		handler = slog.NewJSONHandler(g.stderr, nil)
	}
	log := slog.New(handler)
	// A child subreaper adopts what plugins double-fork, so the runner can
	// stop it, and reaps it, so nothing stays a zombie.
	reaper, err := proc.StartReaper()
	if err != nil {
		return fmt.Errorf("graft runner: %w", err)
	}
	defer reaper.Stop()
	r, err := runner.Open(g.StateDir, runner.Options{Lease: lease, Grace: grace, Token: token, Logger: log,
		NoNamespace: c.PIDNamespace == "off"})
	if err != nil {
		return err
	}
	ln, err := listen.Listen()
	if err != nil {
		r.Close()
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			upgradeRunner(r, ln, log)
		}
	}()
	return r.Serve(ctx, ln, c.Listen, tlsConf)
}

// runnerHold is how long the init of the runner's namespace keeps its
// processes for the next program at least: it attaches within
// milliseconds.
const runnerHold = 30 * time.Second

// upgradeRunner executes the runner's program again, from the path it was
// started from (which a package upgrade replaced), with its arguments, in
// its process (docs/upgrade.md): the new program, checked first (graft
// runner --preflight), takes the processes and sessions over
// (runner.Handover) and serves on the same listener, whose descriptor it
// inherits. A program that fails its check, or to be executed, leaves the
// runner as it was.
func upgradeRunner(r *runner.Runner, ln net.Listener, log *slog.Logger) {
	bin, err := os.Executable()
	if err != nil {
		log.Error("upgrade: the path of the runner's program", "err", err)
		return
	}
	log = log.With("binary", bin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var out bytes.Buffer
	preflight := exec.CommandContext(ctx, bin, append(os.Args[1:], "--preflight")...)
	preflight.Stdout, preflight.Stderr = &out, &out
	err = proc.Run(preflight) // beside the runner's Reaper
	cancel()
	if err != nil {
		log.Error("upgrade: the new program cannot take over: the runner goes on unchanged", "err", err, "output", strings.TrimSpace(out.String()))
		return
	}
	f, err := runner.ListenerFile(ln)
	if err != nil {
		log.Error("upgrade: the runner goes on unchanged", "err", err)
		return
	}
	defer f.Close()
	undo, err := r.Handover(runnerHold)
	if err != nil {
		log.Error("upgrade: the runner cannot hand its processes over: it goes on unchanged", "err", err)
		return
	}
	log.Info("upgrade: executing the new program")
	env := append(os.Environ(), fmt.Sprintf("%s=%d", runner.EnvListenFD, f.Fd()))
	err = syscall.Exec(bin, os.Args, env)
	undo()
	log.Error("upgrade: the new program could not be executed: the runner goes on", "err", err)
}

// tlsConfig is the TLS the flags ask for, on a listener of network: none
// without --tls-cert, --tls-key or --client-ca; a tcp:// listener only.
func (c *RunnerCmd) tlsConfig(network string) (*tls.Config, error) {
	switch {
	case c.TLSCert == "" && c.TLSKey == "" && c.ClientCA == "":
		return nil, nil
	case network != "tcp":
		return nil, errors.New("--tls-cert, --tls-key and --client-ca are for a tcp:// --listen")
	case c.TLSCert == "" || c.TLSKey == "":
		return nil, errors.New("TLS needs both --tls-cert and --tls-key")
	default:
		return runner.TLSConfig(c.TLSCert, c.TLSKey, c.ClientCA)
	}
}
