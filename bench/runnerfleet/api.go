//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A runnerClient asks one runner over its API (docs/runner-api.md), as
// a host would, on one kept-alive connection.
type runnerClient struct {
	base, token string
	c           *http.Client
}

func newRunnerClient(addr, token string) *runnerClient {
	return &runnerClient{base: "http://" + addr, token: token, c: &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DisableCompression: true},
		Timeout:   30 * time.Second,
	}}
}

func (r *runnerClient) close() { r.c.CloseIdleConnections() }

// do sends one request and decodes a 200 answer's JSON into out (nil:
// none); other answers are errors that carry the runner's message.
func (r *runnerClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	if method == http.MethodPost || body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error, Kind string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("%d %s: %s", resp.StatusCode, e.Kind, e.Error)
		}
		return fmt.Errorf("%d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// runnerStatus is what GET /v1/status answers, as far as read here.
type runnerStatus struct {
	PID      int `json:"pid"`
	Sessions []struct {
		Session string    `json:"session"`
		Holder  string    `json:"holder"`
		Expires time.Time `json:"expires"`
	} `json:"sessions"`
	Instances []struct {
		Instance   string `json:"instance"`
		Generation int64  `json:"generation"`
		PID        int    `json:"pid"`
		Session    string `json:"session"`
		Status     string `json:"status"`
	} `json:"instances"`
}

func (r *runnerClient) status(ctx context.Context) (*runnerStatus, error) {
	var st runnerStatus
	if err := r.do(ctx, http.MethodGet, "/v1/status", nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// metrics reads GET /metrics into a map from each sample's name and labels,
// as written (`graft_runner_recoveries_total{result="gone"}`), to its value.
func (r *runnerClient) metrics(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := r.c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m, sc.Err()
}

// openSession opens a session of the prober's own, whose renewals it times.
func (r *runnerClient) openSession(ctx context.Context, lease time.Duration) (string, error) {
	var s struct{ Session string }
	err := r.do(ctx, http.MethodPost, "/v1/sessions", map[string]any{
		"holder": "runnerfleet prober", "leaseMillis": lease.Milliseconds(),
	}, &s)
	return s.Session, err
}

func (r *runnerClient) renew(ctx context.Context, session string) error {
	return r.do(ctx, http.MethodPost, "/v1/sessions/"+session+"/renew", nil, nil)
}

func (r *runnerClient) endSession(ctx context.Context, session string) error {
	return r.do(ctx, http.MethodDelete, "/v1/sessions/"+session, nil, nil)
}

// hostPlugin is a plugin in graft status --json, as far as read here.
type hostPlugin struct {
	Name       string `json:"name"`
	Status     string `json:"status"`
	Instance   string `json:"instance"`
	Generation int64  `json:"generation"`
	PID        int    `json:"pid"`
	Runner     string `json:"runner"`
	LastError  string `json:"lastError"`
}

// hostStatus runs graft status --json for the plugins file file.
func hostStatus(ctx context.Context, graft, file string) ([]hostPlugin, error) {
	out, err := graftCmd(ctx, graft, 30*time.Second, "--file", file, "status", "--json")
	if err != nil {
		return nil, fmt.Errorf("graft status: %v: %s", err, firstLine(out))
	}
	var st struct {
		Plugins []hostPlugin `json:"plugins"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return nil, fmt.Errorf("graft status --json: %v", err)
	}
	return st.Plugins, nil
}

// counts is how many plugins have each status, as "1000 running".
func counts(ps []hostPlugin) string {
	n := map[string]int{}
	for _, p := range ps {
		n[p.Status]++
	}
	if len(n) == 0 {
		return "no plugins"
	}
	return joinSorted(n, func(k string, v int) string { return fmt.Sprintf("%d %s", v, k) })
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// latencies summarises the durations of one kind of call.
type latencies struct {
	ds   []time.Duration
	errs map[string]int
}

func (l *latencies) add(d time.Duration, err error) {
	if err != nil {
		if l.errs == nil {
			l.errs = map[string]int{}
		}
		l.errs[clip(err.Error(), 160)]++
		return
	}
	l.ds = append(l.ds, d)
}

func (l *latencies) String() string {
	if len(l.ds) == 0 {
		return fmt.Sprintf("no answers; errors: %v", l.errs)
	}
	s := slices.Clone(l.ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	r := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }
	out := fmt.Sprintf("%d answers: p50 %s, p90 %s, p99 %s, max %s", len(s), r(q(0.5)), r(q(0.9)), r(q(0.99)), r(s[len(s)-1]))
	nerr := 0
	for _, n := range l.errs {
		nerr += n
	}
	if nerr > 0 {
		out += fmt.Sprintf("; %d errors: %v", nerr, l.errs)
	}
	return out
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// joinSorted is f of each entry of m, by key, joined with ", ".
func joinSorted[V any](m map[string]V, f func(k string, v V) string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, f(k, m[k]))
	}
	return strings.Join(parts, ", ")
}
