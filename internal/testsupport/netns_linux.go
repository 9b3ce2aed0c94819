package testsupport

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/graftland/graft/internal/testprog"
)

// netnsEnv names the test that a child runs in its network namespace.
const netnsEnv = "GRAFT_TEST_NETNS"

// Beyond is the address InNetNS gives its namespace's lo beside
// 127.0.0.1: an address of no loopback, that no packet to it leaves the
// namespace.
var Beyond = netip.MustParseAddr("10.77.0.1")

// InNetNS runs the calling top-level test again in a child process, in a
// network namespace of its own (and a user namespace, when not root),
// whose lo is up with 127.0.0.1 and Beyond. In that child InNetNS returns
// true and the test does its work; in the parent it returns false once
// the child passed, and fails the test with the child's output if it did
// not. Traffic to Beyond so never leaves the test's own namespace.
func InNetNS(t *testing.T) bool {
	t.Helper()
	if os.Getenv(netnsEnv) == t.Name() {
		if err := upLoopback(); err != nil {
			t.Fatalf("set up the network namespace's lo: %v", err)
		}
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), netnsEnv+"="+t.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		testprog.Unavailable(t, fmt.Sprintf("cannot make a network namespace here (%v); as root this test runs", err))
		return false
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("in its network namespace, %s: %v\n%s", t.Name(), err, out)
	}
	return false
}

// upLoopback brings lo up and gives it Beyond too, as lo:1.
func upLoopback() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	lo, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, lo); err != nil {
		return fmt.Errorf("flags of lo: %w", err)
	}
	lo.SetUint16(lo.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, lo); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	alias, err := unix.NewIfreq("lo:1")
	if err != nil {
		return err
	}
	if err := alias.SetInet4Addr(Beyond.AsSlice()); err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFADDR, alias); err != nil {
		return fmt.Errorf("give lo %s: %w", Beyond, err)
	}
	return nil
}
