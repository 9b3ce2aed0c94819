package proc

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testprog"
)

// TestSetupKeepsTheParentDeathSignal: a process started through the
// setup as another user still dies with its Spawner's thread, although
// changing its ids cleared the signal: the setup sets it again.
func TestSetupKeepsTheParentDeathSignal(t *testing.T) {
	testprog.NeedRoot(t, "it starts a process as another user")
	// A goroutine that locks the main thread never ends it, and the
	// children of a Spawner there never get their signal: the first
	// Spawner may be there, so it is not the one under test.
	first := NewSpawner()
	defer first.Close()
	s := NewSpawner()
	control, err := s.Start(Cmd{Argv: []string{"sleep", "100"}, Dir: "/", Env: []string{"PATH=/usr/bin:/bin"}})
	require.NoError(t, err)
	umask := uint32(0o077)
	p, err := s.Start(Cmd{Argv: []string{"sleep", "100"}, Dir: "/", Env: []string{"PATH=/usr/bin:/bin"},
		Umask: &umask, Cred: &Cred{Uid: 65534, Gid: 65534, Groups: []uint32{65534}}})
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	// Once the setup has executed sleep, as nobody.
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/cmdline")
		st, _ := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/status")
		if strings.HasPrefix(string(b), "sleep\x00") && strings.Contains(string(st), "Umask:\t0077") {
			assert.Contains(t, string(st), "Uid:\t65534\t65534\t65534\t65534")
			break
		}
		if time.Now().After(deadline) {
			p.SignalGroup(9)
			p.Reap()
			control.SignalGroup(9)
			control.Reap()
			s.Close()
			t.Fatalf("sleep did not start through the setup: %q", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Close()
	select {
	case <-p.Exited():
	case <-time.After(5 * time.Second):
		p.SignalGroup(9)
		<-p.Exited()
		t.Error("the process outlived its Spawner's thread")
	}
	st, err := p.Reap()
	require.NoError(t, err)
	assert.Equal(t, "SIGKILL", SignalName(st.Signal))
	select {
	case <-control.Exited():
	case <-time.After(5 * time.Second):
		control.SignalGroup(9)
		<-control.Exited()
		t.Error("the control, started without the setup, outlived its Spawner's thread")
	}
	control.Reap()
}
