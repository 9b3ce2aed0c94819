// Package ready waits for a started plugin to pass its ready check: a TCP
// connect, an HTTP GET, a command or a gRPC health check, as its spec's
// ready: says.
package ready

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/graftland/graft/launch"
)

// Exec runs a ready command to completion and returns nil when it exits 0.
// The placement provides it, so the command runs as its plugin does (same
// directory and environment) and is reaped by the same machinery.
type Exec func(ctx context.Context, argv []string) error

// ErrGone is returned when the plugin ended before it was ready.
var ErrGone = errors.New("exited before it was ready")

// NotReadyError is returned when the check did not pass within the
// timeout; Last is the last attempt's error.
type NotReadyError struct {
	Timeout time.Duration
	Last    error
}

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("not ready after %s: %v", launch.Duration(e.Timeout), e.Last)
}

func (e *NotReadyError) Unwrap() error { return e.Last }

// The interval between attempts starts short, so a fast plugin is seen
// ready at once, and grows to a second, so a slow one is not hammered.
const (
	firstInterval = 20 * time.Millisecond
	maxInterval   = time.Second
)

// Wait waits for r's log line, when it has a log pattern, through seen
// (Watch), then tries its tcp, http, exec or grpc check, when it has
// one, until it passes, returning nil; until r's timeout passes, both
// waits together (*NotReadyError); until gone is closed, meaning the
// plugin ended (ErrGone); or until ctx is done (ctx's error).
func Wait(parent context.Context, r *launch.Ready, exec Exec, gone <-chan struct{}, seen <-chan struct{}) error {
	timeout := r.Timeout.Std()
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	if r.Log != "" {
		select {
		case <-seen:
		case <-gone:
			return ErrGone
		case <-ctx.Done():
			if err := parent.Err(); err != nil {
				return err
			}
			return &NotReadyError{Timeout: timeout, Last: fmt.Errorf("no line of its output matched %q", r.Log)}
		}
		if r.Kind() == "" {
			return nil
		}
	}
	interval := firstInterval
	var last error
	for {
		attempt, stop := context.WithCancel(ctx)
		res := make(chan error, 1)
		go func() { res <- Probe(attempt, r.Probe, exec) }()
		select {
		case last = <-res:
		case <-gone:
			stop()
			<-res
			return ErrGone
		}
		stop()
		if last == nil {
			return nil
		}
		select {
		case <-time.After(interval):
		case <-gone:
			return ErrGone
		case <-ctx.Done():
			if err := parent.Err(); err != nil {
				return err
			}
			return &NotReadyError{Timeout: timeout, Last: last}
		}
		interval = min(interval*2, maxInterval)
	}
}

// Probe makes one attempt of p, bounded by ctx: the probe that ready
// checks and health checks (internal/health) share.
func Probe(ctx context.Context, p launch.Probe, exec Exec) error {
	attempt := attempts[p.Kind()]
	if attempt == nil {
		return errors.New("ready: no check")
	}
	return attempt(ctx, p, exec)
}

// attempts makes one attempt of each kind of probe (launch.Kinds).
var attempts = map[string]func(ctx context.Context, p launch.Probe, exec Exec) error{
	"tcp":  dialTCP,
	"http": getHTTP,
	"exec": func(ctx context.Context, p launch.Probe, exec Exec) error { return exec(ctx, p.Exec) },
	"grpc": checkGRPC,
}

// dialTCP passes when p.TCP accepts a connection.
func dialTCP(ctx context.Context, p launch.Probe, _ Exec) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.TCP)
	if err != nil {
		return err
	}
	return conn.Close()
}

// getHTTP passes when p.HTTP answers GET with a status below 400.
func getHTTP(ctx context.Context, p launch.Probe, _ Exec) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.HTTP, nil)
	if err != nil {
		return err
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return fmt.Errorf("GET %s: %s", p.HTTP, resp.Status)
	}
	return nil
}

// probeClient follows no redirects (a 3xx is an answer) and keeps no
// connections, so a probe leaves nothing open behind it.
var probeClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport:     &http.Transport{DisableKeepAlives: true, Proxy: nil},
}
