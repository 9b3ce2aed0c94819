package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/graftland/graft/host"
	"github.com/graftland/graft/host/server"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/skew"
	"github.com/graftland/graft/internal/tlsconf"
)

// HostCmd is `graft host`: the daemon, in the foreground.
type HostCmd struct {
	Listen       string `placeholder:"tcp://HOST:PORT" help:"Also listen on TCP, for clients on other machines (graft --host); requires --token-file, loopback included."`
	TLSCert      string `name:"tls-cert" env:"GRAFT_TLS_CERT" placeholder:"FILE" help:"Serve --listen over TLS with this certificate (PEM); needs --tls-key."`
	TLSKey       string `name:"tls-key" env:"GRAFT_TLS_KEY" placeholder:"FILE" help:"The key of --tls-cert (PEM)."`
	ClientCA     string `name:"client-ca" env:"GRAFT_TLS_CLIENT_CA" placeholder:"FILE" help:"Require, on --listen, client certificates signed by these CAs (PEM); needs --tls-cert."`
	Metrics      string `name:"metrics-listen" env:"GRAFT_METRICS_LISTEN" placeholder:"tcp://HOST:PORT" help:"Also serve GET /metrics (Prometheus) here, without a token; the state dir's socket serves it always, and --listen behind the token."`
	LogFormat    string `enum:"text,json" default:"text" help:"Format of the host's log on stderr: text or json."`
	HostID       string `name:"host-id" env:"GRAFT_HOST_ID" placeholder:"ID" help:"This host's name in the elections of floating plugins; unique among the hosts sharing an elect.dir (default: the hostname and an id kept in the state dir)."`
	ReadyFD      int    `hidden:"" default:"-1" help:"Write ready to this file descriptor once listening."`
	HostLog      bool   `hidden:"" name:"host-log" help:"Write the log, stdout and stderr to host.log in the state dir, rotated (a host started in the background)."`
	PIDNamespace string `name:"pid-namespace" enum:"auto,off" default:"auto" env:"GRAFT_PID_NAMESPACE" help:"auto: run local plugins in a PID namespace of the host's own where the system allows it, so that nothing it starts outlives the host; off: never."`
	AdoptWindow  string `name:"adopt-window" default:"30 seconds" env:"GRAFT_ADOPT_WINDOW" placeholder:"DURATION" help:"After a crash of the host, keep its local plugins running this long for the next host on the state dir to adopt; 0: they die with it (docs/upgrade.md)."`
	Preflight    bool   `hidden:"" help:"Check that this program can take over the state dir, print its version as JSON and exit (graft upgrade runs it)."`
}

// Run runs the host of the state dir until SIGTERM, SIGINT or graft down,
// then stops every plugin in order, consumers first, and exits.
func (c *HostCmd) Run(g *Globals) (err error) {
	out := g.stderr
	if c.HostLog {
		l, err := host.OpenHostLog(g.stateDir(g.File))
		if err != nil {
			return err
		}
		defer l.Close()
		out = l
	}
	var handler slog.Handler = slog.NewTextHandler(out, nil)
	if c.LogFormat == "json" {
		handler = slog.NewJSONHandler(out, nil)
	}
	log := slog.New(handler)
	dir := g.stateDir(g.File)
	if c.Preflight {
		if err := host.Preflight(dir, skew.Version()); err != nil {
			return err
		}
		return writeJSON(g.stdout, host.PreflightAnswer{Version: skew.Version()})
	}
	window, err := adoptWindow(c.AdoptWindow)
	if err != nil {
		return err
	}
	opt := host.Options{Logger: log, HostID: c.HostID, NoNamespace: c.PIDNamespace == "off",
		AdoptWindow: window, Exec: execSelf}
	sopt := server.Options{MetricsListen: c.Metrics}
	if sopt.TCP, err = c.tcp(g); err != nil {
		return err
	}
	if c.Metrics != "" {
		if err := server.CheckMetricsListen(c.Metrics); err != nil {
			return fmt.Errorf("--metrics-listen: %w", err)
		}
	}
	h, err := host.Open(dir, opt)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	serve := func(ctx context.Context, ready func()) error { return server.Serve(ctx, h, sopt, ready) }
	return h.Run(ctx, serve, c.ready)
}

// adoptWindow reads --adopt-window: a duration, or 0.
func adoptWindow(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	return positiveDuration("--adopt-window", s)
}

// execSelf executes binary in place of this host, with its arguments but
// --ready-fd, whose descriptor was the first program's (graft upgrade).
func execSelf(binary string) error {
	var args []string
	for i := 0; i < len(os.Args); i++ {
		a := os.Args[i]
		if a == "--ready-fd" {
			i++
			continue
		}
		if strings.HasPrefix(a, "--ready-fd=") {
			continue
		}
		args = append(args, a)
	}
	return syscall.Exec(binary, args, os.Environ())
}

// tcp is the TCP listener the flags ask for, checked (server.TCP.Validate);
// none without --listen.
func (c *HostCmd) tcp(g *Globals) (server.TCP, error) {
	t := server.TCP{Addr: c.Listen, InsecurePlaintext: g.Plaintext}
	tlsAsked := c.TLSCert != "" || c.TLSKey != "" || c.ClientCA != ""
	switch {
	case c.Listen == "" && tlsAsked:
		return t, errors.New("--tls-cert, --tls-key and --client-ca are for --listen: the state dir's socket takes no TLS")
	case c.Listen == "":
		return t, nil
	case tlsAsked && (c.TLSCert == "" || c.TLSKey == ""):
		return t, errors.New("TLS needs both --tls-cert and --tls-key")
	}
	var err error
	if g.TokenFile != "" {
		if t.Token, err = hostapi.ReadToken(g.TokenFile); err != nil {
			return t, fmt.Errorf("--token-file: %w", err)
		}
	}
	if tlsAsked {
		if t.TLS, err = tlsconf.Server(c.TLSCert, c.TLSKey, c.ClientCA); err != nil {
			return t, err
		}
	}
	return t, t.Validate()
}

// ready tells whoever started the host in the background that it listens.
func (c *HostCmd) ready() {
	if c.ReadyFD < 0 {
		return
	}
	f := os.NewFile(uintptr(c.ReadyFD), "ready")
	fmt.Fprintln(f, "ready")
	f.Close()
}
