//go:build linux

// Command failoverbench measures how long a floating plugin is without a
// leader: after kill -9 of the leader's host (against ttl + poll on the
// file backend, the session TTL on etcd), and after a graceful stop. It
// runs real graft hosts on this machine, electing through one shared
// directory, then again on a real etcd server (Debian's etcd-server) on
// loopback, in one run; the floating plugin is a TCP server on loopback,
// and "led" means a new epoch leads and its address answers.
// bench/failover.sh builds what it needs and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/hostapi"
)

var (
	graftBin = flag.String("graft", "graft", "the graft binary")
	server   = flag.String("server", "", "a TCP server binary taking -listen ADDR (examples/plugins/kv)")
	hosts    = flag.Int("hosts", 3, "hosts sharing the election")
	kills    = flag.Int("kills", 20, "kill -9 rounds")
	stops    = flag.Int("stops", 10, "graceful stop rounds")
	ttl      = flag.Duration("ttl", 8*time.Second, "elect.ttl, and etcd.sessionTTL (whole seconds): longer than 2 × renew + 7 s")
	renew    = flag.Duration("renew", 400*time.Millisecond, "elect.renew")
	poll     = flag.Duration("poll", 250*time.Millisecond, "elect.poll (the file backend)")
	backends = flag.String("backends", "file,etcd", "the backends to measure, in turn")
)

// leaderOf reads who leads the relay's election.
type leaderOf func() (elect.Lease, error)

type bhost struct {
	id, dir, addr string
	cmd           *exec.Cmd
	done          chan struct{}
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *server == "" {
		log.Fatal("failoverbench: -server is required")
	}
	fmt.Printf("%d hosts, ttl %s, renew %s, poll %s; time without a leader whose address answers\n", *hosts, *ttl, *renew, *poll)
	for _, b := range strings.Split(*backends, ",") {
		root, err := os.MkdirTemp("", "failoverbench-")
		check(err)
		switch b {
		case "file":
			runFile(root)
		case "etcd":
			runEtcd(root)
		default:
			log.Fatalf("failoverbench: unknown backend %q", b)
		}
		os.RemoveAll(root)
	}
}

// runFile measures the election through a directory under root.
func runFile(root string) {
	dir := filepath.Join(root, "elect")
	check(os.Mkdir(dir, 0o755))
	yaml := fmt.Sprintf("{dir: %q, address: %%q, ttl: %d millis, renew: %d millis, poll: %d millis}",
		dir, ttl.Milliseconds(), renew.Milliseconds(), poll.Milliseconds())
	killed, stopped := measure(root, yaml, func() (elect.Lease, error) {
		l, _, err := elect.Read(dir, "bench.relay")
		if l.Released {
			return elect.Lease{}, err
		}
		return l, err
	})
	report("file: kill -9 of the leader's host", killed, *ttl+*poll, "ttl + poll")
	report("file: graceful stop of the leader's host", stopped, *poll, "poll")
}

// measure runs the hosts under root, each electing with the elect
// mapping (a format taking the host's address), through kill and stop
// rounds, and returns how long each took.
func measure(root, electYAML string, leader leaderOf) (killed, stopped []time.Duration) {
	var hs []*bhost
	byID := map[string]*bhost{}
	for i := range *hosts {
		h := &bhost{id: fmt.Sprintf("h%d", i+1), dir: filepath.Join(root, fmt.Sprintf("h%d", i+1)), addr: freeAddr()}
		check(os.Mkdir(h.dir, 0o755))
		yaml := fmt.Sprintf("name: bench\nplugins:\n  relay:\n    run: floating\n    command: [%q, -listen, %q]\n"+
			"    elect: "+electYAML+"\n", *server, h.addr, h.addr)
		check(os.WriteFile(filepath.Join(h.dir, "plugins.yaml"), []byte(yaml), 0o644))
		hs = append(hs, h)
		byID[h.id] = h
	}
	defer func() {
		for _, h := range hs {
			h.stop()
		}
	}()
	for _, h := range hs {
		h.start()
	}
	l := waitLeader(leader, 0)
	for range *kills {
		settle(hs, l.Holder)
		old := byID[l.Holder]
		t0 := time.Now()
		old.cmd.Process.Kill()
		<-old.done
		l = waitLeader(leader, l.Epoch)
		killed = append(killed, time.Since(t0))
		old.start()
	}
	for range *stops {
		settle(hs, l.Holder)
		old := byID[l.Holder]
		t0 := time.Now()
		old.cmd.Process.Signal(syscall.SIGTERM)
		l = waitLeader(leader, l.Epoch)
		stopped = append(stopped, time.Since(t0))
		<-old.done
		old.start()
	}
	return killed, stopped
}

// settle waits until every host but the leader follows it, as in steady
// state: a candidate (bootstrapping, contending, backing off) would take
// over a dead leader at once. Then a random part of a renewal lands the
// kill anywhere between two renewals.
func settle(hs []*bhost, leader string) {
	deadline := time.Now().Add(*ttl*3 + 10*time.Second)
	for _, h := range hs {
		for h.id != leader && h.role() != "follower" {
			if time.Now().After(deadline) {
				log.Fatalf("failoverbench: %s does not follow %s", h.id, leader)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(rand.N(*renew))
}

// role is the host's part in the relay's election, as its status says.
func (h *bhost) role() string {
	c, err := hostapi.NewClient(filepath.Join(h.dir, ".graft"))
	if err != nil {
		return ""
	}
	defer c.Close()
	st, err := c.Status(context.Background())
	if err != nil {
		return ""
	}
	for _, r := range st.Plugins {
		if r.Name == "relay" {
			return r.Role
		}
	}
	return ""
}

func report(what string, ds []time.Duration, bound time.Duration, boundName string) {
	slices.Sort(ds)
	med, mx := ds[len(ds)/2], ds[len(ds)-1]
	fmt.Printf("%-42s n=%-3d median %6.0f ms (%.2f × %s)   max %6.0f ms (%.2f × %s)\n", what, len(ds),
		ms(med), float64(med)/float64(bound), boundName, ms(mx), float64(mx)/float64(bound), boundName)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// waitLeader waits for a leader past epoch whose address answers.
func waitLeader(leader leaderOf, epoch int64) elect.Lease {
	deadline := time.Now().Add(*ttl*3 + 10*time.Second)
	for time.Now().Before(deadline) {
		l, err := leader()
		if err == nil && l.Epoch > epoch {
			if c, err := net.DialTimeout("tcp", l.Address, 100*time.Millisecond); err == nil {
				c.Close()
				return l
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	log.Fatalf("failoverbench: no leader past epoch %d", epoch)
	return elect.Lease{}
}

func (h *bhost) start() {
	file := filepath.Join(h.dir, "plugins.yaml")
	h.cmd = exec.Command(*graftBin, "--file", file, "host", "--host-id", h.id)
	logf, err := os.OpenFile(filepath.Join(h.dir, "host.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	check(err)
	defer logf.Close()
	h.cmd.Stdout, h.cmd.Stderr = logf, logf
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	check(h.cmd.Start())
	h.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		cmd.Wait()
		close(done)
	}(h.cmd, h.done)
	c, err := hostapi.NewClient(filepath.Join(h.dir, ".graft"))
	check(err)
	defer c.Close()
	for c.Ping(context.Background(), time.Second) != nil {
		time.Sleep(10 * time.Millisecond)
	}
	out, err := exec.Command(*graftBin, "apply", file).CombinedOutput()
	if err != nil {
		log.Fatalf("failoverbench: apply on %s: %v\n%s", h.id, err, out)
	}
}

func (h *bhost) stop() {
	if h.cmd == nil {
		return
	}
	select {
	case <-h.done:
		return
	default:
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(20 * time.Second):
		h.cmd.Process.Kill()
		<-h.done
	}
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer ln.Close()
	return ln.Addr().String()
}

func check(err error) {
	if err != nil {
		log.Fatal("failoverbench: ", err)
	}
}
