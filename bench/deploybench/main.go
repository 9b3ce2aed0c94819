// Command deploybench replaces an HTTP plugin under load and counts the
// requests that fail (internal/loadgen), in one run on one machine, for
// each way graft can replace it:
//
//   - stop-first, the plugin binding its own port (graft without listen:);
//   - stop-first, on a socket graft holds (listen:);
//   - start-first, on a held socket (update: {order: start-first});
//   - a rolling start-first replacement of 3 replicas on one held socket;
//   - graft upgrade of the host, the plugin on a held socket.
//
// Each way runs ROUNDS replacements under load, both with a new
// connection for every request and with kept-alive ones, and prints the
// requests, the failures and the latency percentiles of all its rounds.
// The plugin is this program run again: a small HTTP server
// (loadgen.Serve) that, on SIGTERM, stops accepting, answers what it
// accepted, and exits.
//
//	go run ./bench/deploybench -graft GRAFT [-rounds 5] [-clients 4]
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"

	"github.com/graftland/graft/internal/loadgen"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		serve(os.Args[2:])
		return
	}
	graft := flag.String("graft", "", "the graft program")
	rounds := flag.Int("rounds", 5, "replacements under load for each way")
	clients := flag.Int("clients", 4, "clients sending at once")
	flag.Parse()
	if *graft == "" {
		fmt.Fprintln(os.Stderr, "deploybench: -graft is required")
		os.Exit(2)
	}
	if err := run(*graft, *rounds, *clients); err != nil {
		fmt.Fprintln(os.Stderr, "deploybench:", err)
		os.Exit(1)
	}
}

// way is one way of replacing the plugin, and the op that does it once.
type way struct {
	name     string
	listen   bool
	order    string
	replicas int      // 0: none
	op       []string // graft's arguments
}

var ways = []way{
	{"stop-first, no listen:", false, "", 0, []string{"restart", "web"}},
	{"stop-first, listen:", true, "", 0, []string{"restart", "web"}},
	{"start-first, listen:", true, "start-first", 0, []string{"restart", "web"}},
	{"rolling, 3 replicas", true, "start-first", 3, []string{"restart", "web"}},
	{"graft upgrade, listen:", true, "", 0, []string{"upgrade"}},
}

func run(graft string, rounds, clients int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("replacements of an HTTP plugin under load: %d rounds a way, %d clients, loopback\n", rounds, clients)
	fmt.Printf("%-24s %-11s %s\n", "way", "connections", "result")
	for _, w := range ways {
		for _, keep := range []bool{false, true} {
			res, err := measure(graft, self, w, keep, rounds, clients)
			if err != nil {
				return fmt.Errorf("%s: %w", w.name, err)
			}
			conns := "new"
			if keep {
				conns = "kept"
			}
			fmt.Printf("%-24s %-11s %s\n", w.name, conns, res)
		}
	}
	return nil
}

// measure runs rounds of w's op under load, in a state dir of its own.
func measure(graft, self string, w way, keep bool, rounds, clients int) (loadgen.Result, error) {
	dir, err := os.MkdirTemp("", "deploybench")
	if err != nil {
		return loadgen.Result{}, err
	}
	defer os.RemoveAll(dir)
	port, err := freePort()
	if err != nil {
		return loadgen.Result{}, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	file := filepath.Join(dir, "plugins.yaml")
	spec := "name: deploybench\nplugins:\n  web:\n"
	if w.listen {
		spec += fmt.Sprintf("    command: [%q, serve, activated]\n    listen: [{name: http, tcp: %q}]\n", self, addr)
	} else {
		spec += fmt.Sprintf("    command: [%q, serve, %q]\n", self, addr)
	}
	spec += "    ready: {log: serving}\n"
	if w.order != "" {
		spec += fmt.Sprintf("    update: {order: %s}\n", w.order)
	}
	if w.replicas > 0 {
		spec += fmt.Sprintf("    replicas: %d\n", w.replicas)
	}
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		return loadgen.Result{}, err
	}
	g := func(args ...string) error {
		out, err := exec.Command(graft, append([]string{"--file", file}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("graft %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := g("apply"); err != nil {
		return loadgen.Result{}, err
	}
	defer g("down")
	total := loadgen.Result{Errors: map[string]int{}, Bodies: map[string]int{}}
	for range rounds {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan loadgen.Result, 1)
		go func() {
			done <- loadgen.Run(ctx, loadgen.Options{URL: "http://" + addr + "/", Clients: clients, KeepAlive: keep})
		}()
		time.Sleep(300 * time.Millisecond)
		opErr := g(w.op...)
		time.Sleep(300 * time.Millisecond)
		cancel()
		res := <-done
		if opErr != nil {
			return loadgen.Result{}, opErr
		}
		total = add(total, res)
	}
	return total, nil
}

// add sums two results; the percentiles are the worse of the two.
func add(a, b loadgen.Result) loadgen.Result {
	a.Requests += b.Requests
	a.Failures += b.Failures
	for k, v := range b.Errors {
		a.Errors[k] += v
	}
	for k, v := range b.Bodies {
		a.Bodies[k] += v
	}
	a.P50, a.P99, a.Max = max(a.P50, b.P50), max(a.P99, b.P99), max(a.Max, b.Max)
	return a
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// serve is the plugin: "serve activated" serves on the sockets of
// LISTEN_FDS, "serve ADDR" binds ADDR itself. It answers "pid=PID" to
// every request; on SIGTERM it stops accepting, answers the connections
// it accepted, and exits.
func serve(args []string) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	var lns []net.Listener
	if args[0] == "activated" {
		got, err := activation.Listeners()
		if err != nil || len(got) == 0 {
			fmt.Println("no sockets handed over:", err)
			os.Exit(3)
		}
		lns = got
	} else {
		ln, err := net.Listen("tcp", args[0])
		if err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		lns = []net.Listener{ln}
	}
	fmt.Println("serving")
	loadgen.Serve(lns, fmt.Sprintf("pid=%d\n", os.Getpid()), sigs)
}
