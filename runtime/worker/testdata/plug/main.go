// Command plug is the WebAssembly plugin of runtime/worker's tests, built
// by them for wasip1. Its first argument says what it does:
//
//	cooperative  say "ready", run until stdin ends, say "bye", exit 0
//	stubborn     say "ready", and after stdin ends spin forever
//	failing      say "one", "two", "three", exit 3
//	identity     say "id=ID generation=N plugin=NAME extra=EXTRA", then cooperative
//	hog          allocate memory until there is none
//	sleeper      say "ready", ignore stdin, sleep an hour (a poll_oneoff
//	             with a clock subscription only)
//	napper       say "ready", read stdin to its end on one goroutine while
//	             another sleeps an hour, and keep sleeping after it ended
//	ballast      hold 32 MiB, every page written, then cooperative
//	escape       link /out/up to a file above its mount, then read it
//	fifo         say "ready", then open /in/fifo, a named pipe, and read it
package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	role := "cooperative"
	if len(os.Args) > 1 {
		role = os.Args[1]
	}
	switch role {
	case "cooperative":
		cooperative()
	case "stubborn":
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		fmt.Println("ignoring the end of stdin")
		n := 0
		for {
			n++ // a busy loop: only closing the module ends it
		}
	case "failing":
		fmt.Println("one")
		fmt.Println("two")
		fmt.Println("three")
		os.Exit(3)
	case "identity":
		fmt.Printf("id=%s generation=%s plugin=%s extra=%s\n", os.Getenv("GRAFT_INSTANCE_ID"), os.Getenv("GRAFT_GENERATION"),
			os.Getenv("GRAFT_PLUGIN"), os.Getenv("EXTRA"))
		cooperative()
	case "hog":
		fmt.Println("ready")
		var keep [][]byte
		for {
			keep = append(keep, make([]byte, 1<<20))
			keep[len(keep)-1][0] = 1
		}
	case "sleeper":
		fmt.Println("ready")
		time.Sleep(time.Hour)
		fmt.Println("woke up")
	case "napper":
		fmt.Println("ready")
		go func() {
			io.Copy(io.Discard, os.Stdin)
			fmt.Println("ignoring the end of stdin")
		}()
		time.Sleep(time.Hour)
		fmt.Println("woke up")
	case "ballast":
		ballast = make([]byte, 32<<20)
		for i := 0; i < len(ballast); i += 4096 {
			ballast[i] = 1 // every page written
		}
		cooperative()
	default:
		files(role)
	}
}

// ballast is what the ballast role holds until it stops.
var ballast []byte

func cooperative() {
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	fmt.Println("bye")
}

// files acts as the roles that try the module's mounts: what it can read,
// write and reach through a link, and a named pipe.
func files(role string) {
	switch role {
	case "escape":
		err := os.Symlink("../secret.txt", "/out/up")
		fmt.Printf("symlink: %v\n", err)
		b, err := os.ReadFile("/out/up")
		fmt.Printf("read %q %v\n", b, err)
	case "fifo":
		fmt.Println("ready")
		b, err := os.ReadFile("/in/fifo")
		fmt.Printf("read %q %v\n", b, err)
	case "mounts":
		b, err := os.ReadFile("/in/hello.txt")
		fmt.Printf("read %q %v\n", b, err)
		err = os.WriteFile("/in/nope.txt", []byte("x"), 0o644)
		fmt.Printf("write /in: %v\n", err != nil)
		err = os.WriteFile("/out/result.txt", []byte("done"), 0o644)
		fmt.Printf("write /out: %v\n", err)
		_, err = os.ReadFile("/etc/passwd")
		fmt.Printf("host files hidden: %v\n", err != nil)
	}
}
