// Package loadgen sends HTTP requests over loopback, from a few clients
// at once, and counts the failures and the latencies: what a deploy that
// drops no request is measured with (bench/loadgen, and the scripts of
// cmd/graft that replace a plugin under load).
package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options are a run's.
type Options struct {
	// URL is requested with GET; an answer other than 200 is a failure.
	URL string
	// Clients send at once, each one request after the other (default 4).
	Clients int
	// KeepAlive keeps each client's connection for its next requests;
	// without it every request dials a new one.
	KeepAlive bool
	// Timeout bounds one request (default 10 seconds): a connection
	// waiting in a socket's queue for a process to accept it is no
	// failure until then.
	Timeout time.Duration
	// Pause is each client's pause between two requests (default none).
	Pause time.Duration
}

// Result is what a run saw.
type Result struct {
	Requests, Failures int
	// Errors counts the failures by what they were, such as "connection
	// refused", "EOF", "status 502".
	Errors map[string]int
	// Latency percentiles of the requests that succeeded.
	P50, P99, Max time.Duration
	// Bodies counts the distinct bodies of the answers: which processes
	// answered, for a plugin that says its pid.
	Bodies map[string]int
}

// String is the result on one line.
func (r Result) String() string {
	var errs []string
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		errs = append(errs, fmt.Sprintf("%s ×%d", k, r.Errors[k]))
	}
	s := fmt.Sprintf("%d requests, %d failed, p50 %s, p99 %s, max %s, %d answering",
		r.Requests, r.Failures, r.P50.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond), r.Max.Round(10*time.Microsecond), len(r.Bodies))
	if len(errs) > 0 {
		s += " (" + strings.Join(errs, ", ") + ")"
	}
	return s
}

// Run sends requests until ctx ends, and returns what it saw.
func Run(ctx context.Context, opt Options) Result {
	if opt.Clients <= 0 {
		opt.Clients = 4
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 10 * time.Second
	}
	var mu sync.Mutex
	res := Result{Errors: map[string]int{}, Bodies: map[string]int{}}
	var lat []time.Duration
	var wg sync.WaitGroup
	for range opt.Clients {
		wg.Go(func() {
			tr := &http.Transport{DisableKeepAlives: !opt.KeepAlive, MaxIdleConnsPerHost: 1,
				DialContext: (&net.Dialer{Timeout: opt.Timeout}).DialContext}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: opt.Timeout}
			for ctx.Err() == nil {
				began := time.Now()
				body, err := get(ctx, c, opt.URL)
				took := time.Since(began)
				if ctx.Err() != nil && err != nil {
					return // cut short by the end of the run: not counted
				}
				mu.Lock()
				res.Requests++
				if err != nil {
					res.Failures++
					res.Errors[kind(err)]++
				} else {
					lat = append(lat, took)
					res.Bodies[body]++
				}
				mu.Unlock()
				if opt.Pause > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(opt.Pause):
					}
				}
			}
		})
	}
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if n := len(lat); n > 0 {
		res.P50, res.P99, res.Max = lat[n/2], lat[min(n-1, n*99/100)], lat[n-1]
	}
	return res
}

// get requests url and returns the answer's body, trimmed.
func get(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d", resp.StatusCode)
	}
	return strings.TrimSpace(string(b)), nil
}

// kind is what a failure was, in a few words.
func kind(err error) string {
	msg := err.Error()
	for _, k := range []string{"connection refused", "connection reset", "EOF", "timeout", "broken pipe"} {
		if strings.Contains(msg, k) {
			return k
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// Serve is the plugin side of a load test: it answers each request on
// the connections accepted on lns with 200 and body, keeping them alive;
// once stop is closed (or sends), it stops accepting, answers the requests
// under way (with Connection: close), closes the idle connections, and
// returns. A server that ends so drops nothing: what comes meanwhile
// waits in the sockets' queues for the next process, and a client whose
// kept-alive connection is closed idle sends again on a new one.
// (net/http's Server.Shutdown can close a connection it accepts as it
// shuts down: golang/go#33313.)
func Serve(lns []net.Listener, body string, stop <-chan os.Signal) {
	var stopping atomic.Bool
	var accepting, answering sync.WaitGroup
	for _, ln := range lns {
		accepting.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				answering.Go(func() { answer(c, body, &stopping) })
			}
		})
	}
	<-stop
	stopping.Store(true)
	for _, ln := range lns {
		ln.Close()
	}
	accepting.Wait()
	answering.Wait()
}

// answer answers the requests of c until the client closes it, or until
// stopping, with no request under way. A connection that has had no
// request yet waits for its first, for up to a second from its accept:
// its client sent it, or is about to, and a close with it unread would
// reset the connection.
func answer(c net.Conn, body string, stopping *atomic.Bool) {
	defer c.Close()
	var head []byte
	buf := make([]byte, 4096)
	accepted := time.Now()
	idle, served := accepted, false
	for {
		if len(head) == 0 && stopping.Load() && (served || time.Since(accepted) > time.Second) {
			return // idle: the client sends again elsewhere
		}
		if time.Since(idle) > 30*time.Second {
			return
		}
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		n, err := c.Read(buf)
		head = append(head, buf[:n]...)
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			return
		}
		end := bytes.Index(head, []byte("\r\n\r\n"))
		if end < 0 {
			continue
		}
		head = head[end+4:]
		conn := "keep-alive"
		if stopping.Load() {
			conn = "close"
		}
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: %s\r\n\r\n%s", len(body), conn, body); err != nil || conn == "close" {
			return
		}
		idle, served = time.Now(), true
	}
}
