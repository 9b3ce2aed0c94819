//go:build linux

// Command failoverbench measures how long a floating plugin is without a
// leader: after kill -9 of the leader's host (against ttl + poll), and
// after a graceful stop (against poll). It runs real graft hosts on this
// machine, sharing one election directory; the floating plugin is a TCP
// server on loopback, and "led" means the lease names a new epoch and its
// address answers. bench/failover.sh builds what it needs and runs it.
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
	ttl      = flag.Duration("ttl", 2*time.Second, "elect.ttl")
	renew    = flag.Duration("renew", 500*time.Millisecond, "elect.renew")
	poll     = flag.Duration("poll", 250*time.Millisecond, "elect.poll")
)

type bhost struct {
	id, dir, addr string
	cmd           *exec.Cmd
	done          chan struct{}
}

var electDir string

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *server == "" {
		log.Fatal("failoverbench: -server is required")
	}
	root, err := os.MkdirTemp("", "failoverbench-")
	check(err)
	defer os.RemoveAll(root)
	electDir = filepath.Join(root, "elect")
	check(os.Mkdir(electDir, 0o755))
	var hs []*bhost
	for i := range *hosts {
		h := &bhost{id: fmt.Sprintf("h%d", i+1), dir: filepath.Join(root, fmt.Sprintf("h%d", i+1)), addr: freeAddr()}
		check(os.Mkdir(h.dir, 0o755))
		yaml := fmt.Sprintf("name: bench\nplugins:\n  relay:\n    run: floating\n    command: [%q, -listen, %q]\n"+
			"    elect: {dir: %q, address: %q, ttl: %d millis, renew: %d millis, poll: %d millis}\n",
			*server, h.addr, electDir, h.addr, ttl.Milliseconds(), renew.Milliseconds(), poll.Milliseconds())
		check(os.WriteFile(filepath.Join(h.dir, "plugins.yaml"), []byte(yaml), 0o644))
		hs = append(hs, h)
	}
	defer func() {
		for _, h := range hs {
			h.stop()
		}
	}()
	for _, h := range hs {
		h.start()
	}
	byID := map[string]*bhost{}
	for _, h := range hs {
		byID[h.id] = h
	}

	l := waitLeader(0)
	var killed, stopped []time.Duration
	for range *kills {
		settle(hs, l.Holder)
		leader := byID[l.Holder]
		t0 := time.Now()
		leader.cmd.Process.Kill()
		<-leader.done
		l = waitLeader(l.Epoch)
		killed = append(killed, time.Since(t0))
		leader.start()
	}
	for range *stops {
		settle(hs, l.Holder)
		leader := byID[l.Holder]
		t0 := time.Now()
		leader.cmd.Process.Signal(syscall.SIGTERM)
		l = waitLeader(l.Epoch)
		stopped = append(stopped, time.Since(t0))
		<-leader.done
		leader.start()
	}
	fmt.Printf("%d hosts, ttl %s, renew %s, poll %s; time without a leader whose address answers\n", *hosts, *ttl, *renew, *poll)
	report("kill -9 of the leader's host", killed, *ttl+*poll, "ttl + poll")
	report("graceful stop of the leader's host", stopped, *poll, "poll")
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
	fmt.Printf("%-36s n=%-3d median %6.0f ms (%.2f × %s)   max %6.0f ms (%.2f × %s)\n", what, len(ds),
		ms(med), float64(med)/float64(bound), boundName, ms(mx), float64(mx)/float64(bound), boundName)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// waitLeader waits for a lease past epoch whose address answers.
func waitLeader(epoch int64) elect.Lease {
	deadline := time.Now().Add(*ttl*3 + 10*time.Second)
	for time.Now().Before(deadline) {
		l, _, err := elect.Read(electDir, "bench.relay")
		if err == nil && l.Epoch > epoch && !l.Released {
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
