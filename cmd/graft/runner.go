package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/proc"
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
}

// Run serves until SIGTERM or SIGINT, then stops every process (interrupt,
// then kill after grace) and exits 0.
func (c *RunnerCmd) Run(g *Globals) error {
	if g.StateDir == "" {
		return errors.New("graft runner needs a state dir: --state-dir DIR (or GRAFT_STATE_DIR)")
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
	return r.Serve(ctx, ln, c.Listen, tlsConf)
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
