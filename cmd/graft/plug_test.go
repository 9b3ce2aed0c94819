//go:build linux

package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"

	harness "github.com/graftland/graft/internal/fleet"
	"github.com/graftland/graft/internal/loadgen"
)

// plugMain is the plugin of the end-to-end scripts, this test binary run
// as "plug":
//
//	plug serve NAME          say "NAME up instance=ID generation=N", run until SIGTERM, say "NAME bye"
//	plug listen NAME ADDR    serve, and accept connections on ADDR (for ready: tcp)
//	plug http NAME ADDR      serve, and answer HTTP GET on ADDR with 200 (for ready: http)
//	plug stubborn NAME       serve, but ignore SIGTERM
//	plug exit CODE           exit with CODE at once
//	plug shout LINE...       print each LINE, a Go string literal when it is one, then exit 3
//	plug sleep DURATION      sleep, then exit 0 (a ready: exec command)
//	plug daemon NAME [ADDR]  start "plug serve NAME-daemon" in a new session, then serve NAME (and
//	                         accept connections on ADDR, if given, as listen does)
//	plug env NAME VAR...     say "NAME VAR=value" (or "NAME VAR unset") for each VAR, then serve
//	plug once NAME FILE [D]  sleep D (default 0), append "NAME ran" to FILE, say "NAME done", exit 0 (a one-shot)
//	plug need FILE NAME      exit 4 saying so unless FILE exists, else serve NAME
//	plug probe OK LOG        append "probe where=$GRAFT_WHERE" to LOG; exit 0 if the file OK$GRAFT_GENERATION
//	                         exists (one per generation), else 1
//	plug flaky NAME FILE     the first time (FILE missing) make FILE and exit 3, then say "NAME done" and exit 0
//	plug late NAME DURATION  sleep DURATION, say "NAME listening at=UNIXNANO", then serve NAME
//	plug tcp NAME ADDR       serve, and accept connections on ADDR with a listen backlog of 0, so that
//	                         connections stop being accepted at once when it is frozen (SIGSTOP)
//	plug activated NAME [D]  serve HTTP on the sockets of LISTEN_FDS (coreos/go-systemd's activation,
//	                         which checks LISTEN_PID), answering "NAME pid=PID"; wait D before it
//	                         serves (default 0); on SIGTERM, finish the requests under way and exit
func plugMain() {
	args := os.Args[1:]
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: plug serve|listen|stubborn|exit|sleep ARG")
		os.Exit(2)
	}
	if plugJobs(args) {
		return
	}
	switch args[0] {
	case "hold": // DIR PLUGIN HOST: the fleet's plugin (internal/fleet)
		if err := harness.Hold(args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "serve":
		serve(args[1], nil)
	case "listen":
		listenAt(args[2])
		serve(args[1], nil)
	case "http":
		ln, err := net.Listen("tcp", args[2])
		if err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		go http.Serve(ln, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		serve(args[1], nil)
	case "activated":
		activated(args[1:])
	case "reloader": // NAME FILE: on SIGHUP, says FILE's first line
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
		fmt.Printf("%s up instance=%s generation=%s\n", args[1], os.Getenv("GRAFT_INSTANCE_ID"), os.Getenv("GRAFT_GENERATION"))
		for sig := range sigs {
			if sig != syscall.SIGHUP {
				break
			}
			b, _ := os.ReadFile(args[2])
			line, _, _ := strings.Cut(string(b), "\n")
			fmt.Printf("%s reloaded %s\n", args[1], line)
		}
		fmt.Printf("%s bye\n", args[1])
		exit0()
	case "count": // NAME: "n N" every 10 ms, from 1; each signal it gets said, SIGTERM ends it
		sigs := make(chan os.Signal, 8)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE)
		tick := time.NewTicker(10 * time.Millisecond)
		for i := 1; ; {
			select {
			case sig := <-sigs:
				fmt.Printf("signal %s\n", sig)
				if sig == syscall.SIGTERM {
					exit0()
				}
			case <-tick.C:
				fmt.Printf("n %d\n", i)
				i++
			}
		}
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		serve(args[1], make(chan os.Signal))
	case "shout":
		// Lines written as Go strings, so a script can give it control
		// characters: plug shout '"\x1b]0;pwned\a"'.
		for _, a := range args[1:] {
			line, err := strconv.Unquote(a)
			if err != nil {
				line = a
			}
			fmt.Println(line)
		}
		os.Exit(3)
	case "exit":
		code, _ := strconv.Atoi(args[1])
		fmt.Println("exiting with", code)
		os.Exit(code)
	case "sleep":
		d, _ := time.ParseDuration(args[1])
		time.Sleep(d)
		exit0()
	case "env":
		for _, k := range args[2:] {
			if v, ok := os.LookupEnv(k); ok {
				fmt.Printf("%s %s=%s\n", args[1], k, v)
			} else {
				fmt.Printf("%s %s unset\n", args[1], k)
			}
		}
		serve(args[1], nil)
	case "daemon":
		cmd := exec.Command(os.Args[0], "serve", args[1]+"-daemon")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		if len(args) > 2 {
			listenAt(args[2])
		}
		serve(args[1], nil)
	}
}

// listenAt accepts, and closes, connections on addr until the process
// ends; it exits 3 if it cannot listen.
func listenAt(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	go acceptAll(ln)
}

// serve says it is up, waits for SIGTERM (or on forever), says bye.
func serve(name string, sigs chan os.Signal) {
	if sigs == nil {
		sigs = make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	}
	fmt.Printf("%s up instance=%s generation=%s\n", name, os.Getenv("GRAFT_INSTANCE_ID"), os.Getenv("GRAFT_GENERATION"))
	<-sigs
	fmt.Printf("%s bye\n", name)
	exit0()
}

// exit0 exits with status 0 at once. Under -race, os.Exit(0) sleeps a
// second first (GORACE's atexit_sleep_ms), which would look like a slow
// stop; plugins do not get the scripts' GORACE=atexit_sleep_ms=0, since
// a plugin's environment is what its file says. A race is still reported
// as it is found.
func exit0() { syscall.Exit(0) }

// smallListener listens on addr (IPv4 HOST:PORT) with a backlog of 0:
// the kernel queues one connection the process has not accepted and
// drops the handshakes after it, as a wedged server's port does once its
// queue is full. net.Listen takes the system's largest backlog.
func smallListener(addr string) (net.Listener, error) {
	ta, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return nil, err
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		return nil, err
	}
	sa := &syscall.SockaddrInet4{Port: ta.Port}
	copy(sa.Addr[:], ta.IP.To4())
	if err := syscall.Bind(fd, sa); err != nil {
		return nil, err
	}
	if err := syscall.Listen(fd, 0); err != nil {
		return nil, err
	}
	return net.FileListener(f)
}

// acceptAll accepts and closes connections until ln fails.
func acceptAll(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// plugJobs acts as the roles of the scripts of one-shots, health checks
// and ready log lines (probe, flaky, late, tcp, once, need), and reports whether
// args named one.
func plugJobs(args []string) bool {
	switch args[0] {
	case "probe":
		f, err := os.OpenFile(args[2], os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "probe where=%s\n", os.Getenv("GRAFT_WHERE"))
			f.Close()
		}
		ok := args[1] + os.Getenv("GRAFT_GENERATION")
		if _, err := os.Stat(ok); err != nil {
			fmt.Printf("%s missing\n", ok)
			os.Exit(1)
		}
		exit0()
	case "flaky":
		if _, err := os.Stat(args[2]); err != nil {
			os.WriteFile(args[2], nil, 0o644)
			fmt.Printf("%s failed once\n", args[1])
			os.Exit(3)
		}
		fmt.Printf("%s done\n", args[1])
		exit0()
	case "late":
		d, _ := time.ParseDuration(args[2])
		time.Sleep(d)
		fmt.Printf("%s listening at=%d\n", args[1], time.Now().UnixNano())
		serve(args[1], nil)
	case "tcp":
		ln, err := smallListener(args[2])
		if err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		go acceptAll(ln)
		serve(args[1], nil)
	case "once":
		if len(args) > 3 {
			d, _ := time.ParseDuration(args[3])
			time.Sleep(d)
		}
		f, err := os.OpenFile(args[2], os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = fmt.Fprintf(f, "%s ran\n", args[1])
			f.Close()
		}
		if err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		fmt.Printf("%s done\n", args[1])
		exit0()
	case "need":
		if _, err := os.Stat(args[1]); err != nil {
			fmt.Printf("%s: %s missing\n", args[2], args[1])
			os.Exit(4)
		}
		serve(args[2], nil)
	default:
		return false
	}
	return true
}

// activated is plug activated: a program written for socket activation,
// as systemd hands sockets over (loadgen.Serve answers on them).
func activated(args []string) {
	name := args[0]
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	if len(args) > 1 {
		d, _ := time.ParseDuration(args[1])
		time.Sleep(d)
	}
	byName, err := activation.ListenersWithNames()
	if err != nil || len(byName) == 0 {
		fmt.Printf("%s: no sockets handed over (LISTEN_FDS=%q LISTEN_PID=%q): %v\n", name, os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_PID"), err)
		os.Exit(3)
	}
	var names []string
	var all []net.Listener
	for n, lns := range byName {
		names = append(names, n)
		all = append(all, lns...)
	}
	sort.Strings(names)
	fmt.Printf("%s serving on %s pid=%d\n", name, strings.Join(names, ","), os.Getpid())
	loadgen.Serve(all, fmt.Sprintf("%s pid=%d\n", name, os.Getpid()), sigs)
	fmt.Printf("%s bye\n", name)
	exit0()
}
