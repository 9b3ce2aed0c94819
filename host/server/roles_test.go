//go:build linux

package server

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"

	"golang.org/x/sys/unix"

	"github.com/graftland/graft/host"
)

// roleEnv names the role the test binary plays when run again by a test.
const roleEnv = "HOST_TEST_ROLE"

// runRole plays role (testsupport.PlayRole), or returns false for a role
// it does not know.
func runRole(role string, _ []string) bool {
	if role != "tmpfs-host" {
		return false
	}
	tmpfsHostMain()
	return true
}

// tmpfsHostMain mounts a tmpfs of HOST_TEST_TMPFS bytes on HOST_TEST_DIR,
// in this process's own mount namespace, and runs hosts on it as told on
// stdin, one line at a time: "open" opens a host there, serves it and
// brings back its last applied spec, then prints "ready" and the
// reapply's error, if any; "close" shuts it down and prints "closed". It
// exits at the end of stdin.
func tmpfsHostMain() {
	dir := os.Getenv("HOST_TEST_DIR")
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+os.Getenv("HOST_TEST_TMPFS")+",mode=0700"); err != nil {
		fmt.Println("mount:", err)
		os.Exit(1)
	}
	var (
		h      *host.Host
		cancel context.CancelFunc
		served chan error
	)
	stop := func() {
		cancel()
		<-served
		h.Shutdown(context.Background())
		h = nil
	}
	opt := host.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)), Timing: timing}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "open":
			var err error
			if h, err = host.Open(dir, opt); err != nil {
				fmt.Println("open:", err)
				continue
			}
			reapply := h.BeginReapply()
			ctx, end := context.WithCancel(context.Background())
			cancel = end
			served = make(chan error, 1)
			listening := make(chan struct{})
			go func() { served <- Serve(ctx, h, Options{}, func() { close(listening) }) }()
			<-listening
			fmt.Println("ready", reapply(ctx))
		case "close":
			stop()
			fmt.Println("closed")
		}
	}
	if h != nil {
		stop()
	}
}
