//go:build linux

package privsock

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
)

// roleEnv, set, makes this test binary a helper that another user runs
// (internal/asnobody), instead of the tests.
const roleEnv = "PRIVSOCK_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
		os.Exit(m.Run())
	case "listen":
		listenMain(os.Args[1])
	default:
		fmt.Fprintln(os.Stderr, "unknown role")
		os.Exit(2)
	}
}

// listenMain listens on a unix socket at path that anyone may connect
// to, says "ready", then for each connection says how many bytes it got
// before the client closed it.
func listenMain(path string) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	os.Chmod(path, 0o777)
	fmt.Println("ready")
	out := bufio.NewWriter(os.Stdout)
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		fmt.Fprintf(out, "got %d bytes\n", n)
		out.Flush()
	}
}
