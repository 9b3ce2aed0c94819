package elect

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// roleEnv, set, makes this test binary a host that another user runs
// (internal/asnobody), instead of the tests: it campaigns in the election
// of its arguments (elect/users_test.go).
const roleEnv = "ELECT_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
		goleak.VerifyTestMain(m)
	case "campaign":
		os.Exit(campaignMain(os.Args[1], os.Args[2]))
	default:
		fmt.Fprintln(os.Stderr, "unknown role")
		os.Exit(2)
	}
}

// The durations of the hosts of users_test.go, on real time. Two
// processes, one started in the middle of the test, under the race
// detector on a busy machine: a leader whose renewal is woken a renew late
// rightly loses its term (ErrLate), so renew leaves a second of room, and
// ttl two renewals more before a follower may take it for dead.
const (
	usersTTL   = 3 * time.Second
	usersRenew = time.Second
	usersPoll  = 100 * time.Millisecond
)

// campaignMain campaigns as host id in dir until its stdin closes, and
// says on stdout what it sees: "won <epoch>" when it leads, "obs <holder>
// <epoch> <dead>" at each observation, "problem <error>" when Problem
// reports one and "leader-err <error>" for what Leader returned then,
// "clear" when the problem is gone. At the end it resigns what it leads.
func campaignMain(dir, id string) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // its plugin's address answers
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	defer ln.Close()
	e, err := New(Config{Dir: dir, Instance: instance, HostID: id, Address: ln.Addr().String(),
		TTL: usersTTL, Renew: usersRenew, Poll: usersPoll})
	if err != nil {
		fmt.Println("new:", err)
		return 1
	}
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	var wg sync.WaitGroup
	terms := make(chan *Term, 1)
	wg.Add(3)
	go func() {
		defer wg.Done()
		t, err := e.Campaign(ctx)
		if err == nil {
			say("won %d", t.Epoch())
			terms <- t
		}
	}()
	go func() {
		defer wg.Done()
		for o := range e.Observe(ctx) {
			say("obs %s %d %t", o.Lease.Holder, o.Lease.Epoch, o.Dead)
		}
	}()
	go func() {
		defer wg.Done()
		var had bool
		for Sleep(ctx, e.cfg.Clock, usersPoll) == nil {
			err := e.Problem()
			switch {
			case err != nil && !had:
				say("problem %v", err)
				_, _, lerr := e.Leader(ctx)
				say("leader-err %v", lerr)
			case err == nil && had:
				say("clear")
			}
			had = err != nil
		}
	}()
	bufio.NewReader(os.Stdin).ReadString('\n') // until the test closes it
	cancel()
	wg.Wait()
	select {
	case t := <-terms:
		t.Resign(context.Background())
	default:
	}
	return 0
}
