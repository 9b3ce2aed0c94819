package runtimetest

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// Play acts as a plugin of one of the roles every placement's tests use,
// then exits; it returns false, having done nothing, for a role it does
// not know. A placement's tests run their own binary again as the plugin
// (as go-plugin's helper processes are) and call Play first.
//
//	cooperative       prints "ready"; at SIGTERM or SIGINT prints "got SIGNAL, bye" and exits 0
//	stubborn          prints "ready" and ignores SIGTERM and SIGINT: only SIGKILL ends it
//	exit CODE LINE... prints the lines, then exits with status CODE
//	identity          prints "id=… generation=… plugin=… extra=…" (graft's variables and EXTRA), then is cooperative
//	listen WAIT ADDR  waits WAIT (Go syntax), then serves TCP on ADDR, accepting and closing, and is cooperative
func Play(role string, args []string) bool {
	say := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
	switch role {
	case "cooperative":
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		say("ready")
		s := <-sigs
		say("got %v, bye", s)
		os.Exit(0)
	case "stubborn":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		say("ready")
		select {}
	case "exit":
		code, _ := strconv.Atoi(args[0])
		for _, line := range args[1:] {
			say("%s", line)
		}
		os.Exit(code)
	case "identity":
		say("id=%s generation=%s plugin=%s extra=%s", os.Getenv("GRAFT_INSTANCE_ID"), os.Getenv("GRAFT_GENERATION"),
			os.Getenv("GRAFT_PLUGIN"), os.Getenv("EXTRA"))
		Play("cooperative", nil)
	case "listen":
		d, _ := time.ParseDuration(args[0])
		time.Sleep(d)
		l, err := net.Listen("tcp", args[1])
		if err != nil {
			say("listen: %v", err)
			os.Exit(3)
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		Play("cooperative", nil)
	}
	return false
}
