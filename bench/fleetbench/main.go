//go:build linux

// Command fleetbench runs a fleet of real graft hosts electing floating
// plugins through faults (internal/fleet) and prints what it saw: on a
// real 3-member etcd cluster on loopback, then on one shared directory.
// bench/fleet.sh builds graft and runs it. It is also the fleet's plugin:
// fleetbench hold DIR PLUGIN HOST.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/graftland/graft/internal/fleet"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "hold" {
		if err := fleet.Hold(os.Args[2:]); err != nil {
			log.Fatal(err)
		}
		return
	}
	var (
		graft     = flag.String("graft", "graft", "the graft program")
		hosts     = flag.Int("hosts", 100, "hosts on etcd")
		fileHosts = flag.Int("file-hosts", 20, "hosts on the shared directory")
		plugins   = flag.Int("plugins", 10, "floating plugins")
		faults    = flag.Int("faults", 3, "faults of each kind")
		ttl       = flag.Duration("ttl", 15*time.Second, "elect.ttl, and etcd's sessionTTL (whole seconds), graft's default: longer than 2 × renew + 7 s")
		renew     = flag.Duration("renew", 3*time.Second, "elect.renew, graft's default: longer than an etcd leader election, so that leaders keep their terms across one, and than a busy cluster's answer")
		poll      = flag.Duration("poll", 2*time.Second, "elect.poll (the file backend), graft's default")
		steady    = flag.Duration("steady", 20*time.Second, "the window in which the load is measured")
		backends  = flag.String("backends", "etcd,file", "the backends to run, in turn")
		seed      = flag.Uint64("seed", uint64(time.Now().UnixNano()), "the random source's start")
		root      = flag.String("root", "", "where the fleet's files go (default: a temporary directory, removed)")
		only      = flag.String("only", "", "the kinds of fault to make, by name, comma-separated: kill, freeze, member, leader, partition, cluster, readonly (default: every kind the backend has)")
	)
	flag.Parse()
	log.SetFlags(log.Ltime)
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	var kinds []fleet.Kind
	for _, name := range strings.FieldsFunc(*only, func(r rune) bool { return r == ',' }) {
		k, ok := fleet.Names[name]
		if !ok {
			log.Fatalf("-only: no kind of fault is named %q", name)
		}
		kinds = append(kinds, k)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed := false
	for _, b := range strings.Split(*backends, ",") {
		dir := *root
		if dir == "" {
			dir, err = os.MkdirTemp("", "fleetbench-")
			if err != nil {
				log.Fatal(err)
			}
			defer os.RemoveAll(dir)
		} else {
			dir = dir + "/" + b
		}
		n := *hosts
		if b == fleet.File {
			n = *fileHosts
		}
		fmt.Printf("seed %d\n", *seed)
		rep, err := fleet.Run(ctx, fleet.Config{
			Graft: *graft, Hold: []string{self, "hold"}, Root: dir, Backend: b,
			Hosts: n, Plugins: *plugins, TTL: *ttl, Renew: *renew, Poll: *poll, LockStale: 1500 * time.Millisecond,
			Faults: *faults, Only: kinds, Steady: *steady, Seed: *seed, Logf: log.Printf,
		})
		if rep != nil {
			fmt.Print(rep)
			failed = failed || len(rep.Violations) > 0 || len(rep.Leaderless) > 0
		}
		if err != nil {
			log.Printf("%s: %v", b, err)
			failed = true
		}
		fmt.Println()
	}
	if failed {
		os.Exit(1)
	}
}
