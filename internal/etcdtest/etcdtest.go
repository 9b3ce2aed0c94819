// Package etcdtest runs a real etcd server (Debian's etcd-server) for
// tests and benchmarks: one member on loopback ports of its own, with its
// data in a directory of the caller's, stopped when the test ends, even
// when it fails.
package etcdtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/graftland/graft/internal/testprog"
)

// Program and Package name the server and the Debian package that has it.
const (
	Program = "etcd"
	Package = "etcd-server"
)

// TLS are the PEM files of a server that serves its clients over TLS and
// asks them for a certificate that CA signed.
type TLS struct{ CA, Cert, Key string }

// Server is one etcd member.
type Server struct {
	dir    string // its data and its log
	client string // its client URL
	peer   string
	tls    *TLS
	// name is its member name, and cluster the initial cluster it was
	// made in (name=peer,…): a lone member's when empty.
	name, cluster string

	cmd    *exec.Cmd
	exited chan struct{}
}

// Start runs a server for t, or ends t (testprog.Need) when etcd is not
// installed. It is stopped when t ends.
func Start(t testing.TB) *Server { return StartTLS(t, nil) }

// StartTLS is Start, serving clients over tls when it is not nil.
func StartTLS(t testing.TB, tls *TLS) *Server {
	t.Helper()
	testprog.Need(t, Program, Package)
	s, err := LaunchTLS(t.TempDir(), tls)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			b, _ := os.ReadFile(s.logPath())
			t.Logf("--- etcd's log ---\n%s", tail(b, 4000))
		}
	})
	return s
}

// Launch runs a server with its data in dir and waits until it answers.
func Launch(dir string) (*Server, error) { return LaunchTLS(dir, nil) }

// LaunchTLS is Launch, serving clients over tls when it is not nil.
func LaunchTLS(dir string, tls *TLS) (*Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	scheme := "http://"
	if tls != nil {
		scheme = "https://"
	}
	s := &Server{dir: dir, client: scheme + ports[0], peer: "http://" + ports[1], tls: tls, name: "graft-test"}
	if err := s.run(); err != nil {
		return nil, err
	}
	return s, nil
}

// Endpoint is the server's client URL.
func (s *Server) Endpoint() string { return s.client }

func (s *Server) logPath() string { return filepath.Join(s.dir, "etcd.log") }

// run starts the process on s's ports and data, and waits until it is
// healthy.
func (s *Server) run() error {
	if err := s.launch(); err != nil {
		return err
	}
	return s.waitHealthy()
}

// launch starts the process on s's ports and data. Short heartbeats keep
// the shortest lease etcd grants at one second, so tests can use short
// session TTLs.
func (s *Server) launch() error {
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cluster := s.cluster
	if cluster == "" {
		cluster = s.name + "=" + s.peer
	}
	cmd := exec.Command(Program, "--name", s.name, "--data-dir", filepath.Join(s.dir, "data"),
		"--listen-client-urls", s.client, "--advertise-client-urls", s.client,
		"--listen-peer-urls", s.peer, "--initial-advertise-peer-urls", s.peer,
		"--initial-cluster", cluster, "--initial-cluster-state", "new",
		"--heartbeat-interval", "50", "--election-timeout", "250",
		"--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn")
	if t := s.tls; t != nil {
		cmd.Args = append(cmd.Args, "--cert-file", t.Cert, "--key-file", t.Key, "--trusted-ca-file", t.CA, "--client-cert-auth")
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	return nil
}

// waitHealthy waits until the started process answers, and stops it
// when it does not.
func (s *Server) waitHealthy() error {
	if err := s.awaitHealthy(30 * time.Second); err != nil {
		s.Stop()
		b, _ := os.ReadFile(s.logPath())
		return fmt.Errorf("%w; its log:\n%s", err, tail(b, 4000))
	}
	return nil
}

func (s *Server) awaitHealthy(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		select {
		case <-s.exited:
			return errors.New("etcd exited at start")
		default:
		}
		if s.healthy() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd at %s not healthy within %s", s.client, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// healthy reports whether the server answers its health check. Over
// TLS, a TCP connect is the check: the health endpoint would want a
// client certificate.
func (s *Server) healthy() bool {
	if s.tls != nil {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.client, "https://"), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.client+"/health", nil)
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// noKeepAlive leaves no idle connection, nor its goroutines, behind: the
// tests check that none outlives them.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// Stop ends the server (SIGTERM, then SIGKILL after 5 seconds) and waits
// for it. It may be called more than once.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// Restart stops the server and runs it again on the same ports and data.
func (s *Server) Restart() error {
	s.Stop()
	return s.run()
}

// Kill ends the server with SIGKILL, as a crash would, and waits for it.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
}

// PID is the server's process id, 0 before it starts.
func (s *Server) PID() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Running reports whether the server's process runs.
func (s *Server) Running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Cluster is a cluster of etcd members on loopback ports of their own.
type Cluster struct {
	Members []*Server
}

// LaunchCluster runs a cluster of n members, with their data under dir,
// and waits until each answers.
func LaunchCluster(dir string, n int) (*Cluster, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	var initial []string
	for i := range n {
		m := &Server{dir: filepath.Join(dir, fmt.Sprintf("m%d", i+1)), client: "http://" + ports[2*i],
			peer: "http://" + ports[2*i+1], name: fmt.Sprintf("m%d", i+1)}
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return nil, err
		}
		initial = append(initial, m.name+"="+m.peer)
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		m.cluster = strings.Join(initial, ",")
	}
	// The members elect a leader only once a quorum runs: start all of
	// them before waiting for any.
	for _, m := range c.Members {
		if err := m.launch(); err != nil {
			c.Stop()
			return nil, err
		}
	}
	for _, m := range c.Members {
		if err := m.waitHealthy(); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// Endpoints are the members' client URLs.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.client)
	}
	return eps
}

// Stop ends every member.
func (c *Cluster) Stop() {
	for _, m := range c.Members {
		m.Stop()
	}
}

// Start runs again every member that does not run, and waits until each
// answers.
func (c *Cluster) Start() error {
	var started []*Server
	for _, m := range c.Members {
		if !m.Running() {
			if err := m.launch(); err != nil {
				return err
			}
			started = append(started, m)
		}
	}
	for _, m := range started {
		if err := m.waitHealthy(); err != nil {
			return err
		}
	}
	return nil
}

// Leader is the index of the member that leads the cluster now, as the
// first running member that answers sees it.
func (c *Cluster) Leader() (int, error) {
	ids := map[string]int{}
	var leader string
	for i, m := range c.Members {
		if !m.Running() {
			continue
		}
		st, err := m.status()
		if err != nil {
			continue
		}
		ids[st.Header.MemberID] = i
		if leader == "" {
			leader = st.Leader
		}
	}
	if i, ok := ids[leader]; ok && leader != "" {
		return i, nil
	}
	return -1, errors.New("no running member names a leader that runs")
}

// memberStatus is what the gRPC gateway's maintenance status answers.
type memberStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
	} `json:"header"`
	Leader   string `json:"leader"`
	RaftTerm uint64 `json:"raftTerm,string"`
}

// Term is the highest raft term a running member that answers is in: it
// grows by one with each election, and is kept on disk across restarts.
// 0 when none answers.
func (c *Cluster) Term() uint64 {
	var term uint64
	for _, m := range c.Members {
		if !m.Running() {
			continue
		}
		if st, err := m.status(); err == nil {
			term = max(term, st.RaftTerm)
		}
	}
	return term
}

func (s *Server) status() (memberStatus, error) {
	var st memberStatus
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.client+"/v3/maintenance/status", strings.NewReader("{}"))
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("etcd status: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// Metric sums the samples of a counter in the member's /metrics, as a
// float; 0 when the member does not answer.
func (s *Server) Metric(name string) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.client+"/metrics", nil)
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || (len(line) > len(name) && line[len(name)] != '{' && line[len(name)] != ' ') {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// freePorts returns n loopback host:port pairs free a moment ago.
func freePorts(n int) ([]string, error) {
	var addrs []string
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
