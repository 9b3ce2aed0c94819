package proc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testsupport"
)

// TestTableInPlace: an entry set again (its pid handed out anew, with
// another parent and group) leaves its old parent's and group's lists,
// and one removed leaves every list; a child no Spawner registered is a
// stray of its parent, a registered one is not.
func TestTableInPlace(t *testing.T) {
	registry.Lock()
	registry.pids[900002] = true
	registry.Unlock()
	t.Cleanup(func() {
		registry.Lock()
		delete(registry.pids, 900002)
		registry.Unlock()
	})
	tbl := index(map[int]entry{
		900001: {pid: 900001, ppid: 1, pgid: 900001, start: 10},
		900002: {pid: 900002, ppid: 900001, pgid: 900002, start: 11},
		900003: {pid: 900003, ppid: 900001, pgid: 900002, start: 12},
	})
	sorted := func(l []int) []int { l = slices.Clone(l); slices.Sort(l); return l }
	assert.Equal(t, []int{900002, 900003}, sorted(tbl.children[900001]))
	assert.Equal(t, []int{900003}, tbl.strays[900001], "the registered child is no stray")
	assert.Equal(t, []int{900002, 900003}, sorted(tbl.groups[900002]))

	tbl.set(entry{pid: 900003, ppid: 1, pgid: 900003, start: 20}) // the pid, handed out again
	assert.Equal(t, []int{900002}, tbl.children[900001])
	assert.Empty(t, tbl.strays[900001])
	assert.Equal(t, []int{900002}, tbl.groups[900002])
	assert.Equal(t, []int{900001, 900003}, sorted(tbl.children[1]))
	assert.Equal(t, []int{900001, 900003}, sorted(tbl.strays[1]))
	assert.Equal(t, uint64(20), tbl.entries[900003].start)

	tbl.remove(900002)
	tbl.remove(900002) // twice: nothing more
	assert.NotContains(t, tbl.children, 900001, "an empty list goes")
	assert.NotContains(t, tbl.groups, 900002)
	assert.NotContains(t, tbl.entries, 900002)
}

// TestFamilyFindsTheInitsOrphanAfterAWholeRead: a daemon that a plugin
// double-forked, adopted by the init of its namespace, is found by its
// marker among the init's children, also when the table was read whole
// after its adoption (so that no entry ties it to the plugin any more),
// while the init's other plugins are not taken for family; and the next
// look after the plugin's exit still finds it.
func TestFamilyFindsTheInitsOrphanAfterAWholeRead(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	testsupport.NeedNamespace(t, s.Isolation().Err)
	var others []*Process
	for range 20 {
		others = append(others, startIsolated(t, s, "exec sleep 60", nil))
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	p := startIsolated(t, s, family, w)
	w.Close()
	_, err = bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	ms := waitFamilyOf(t, p, 2, 1)
	var daemon Member
	var group []Member
	for _, m := range ms {
		if m.Pgid != p.Pid {
			daemon = m
		} else {
			group = append(group, m)
		}
	}
	d, err := stat(daemon.Pid)
	require.NoError(t, err)
	require.Equal(t, p.ns.pid, d.ppid, "the init adopted the daemon")

	forgetTable()
	p.fmu.Lock()
	p.known = nil // nor is it remembered from the look before
	p.fmu.Unlock()
	ms = mustFamily(t, p)
	assert.Contains(t, pidsOf(ms), daemon.Pid, "found by its marker among the init's children")
	for _, o := range others {
		assert.NotContains(t, pidsOf(ms), o.Pid, "another plugin of the init")
		assert.Empty(t, mustFamily(t, o))
	}

	require.NoError(t, p.SignalGroup(syscall.SIGKILL))
	<-p.Exited()
	require.True(t, WaitMembers(group, nil), "the group's sleep, killed with it")
	ms = mustFamily(t, p)
	assert.Equal(t, []int{daemon.Pid}, pidsOf(ms), "the daemon outlives the plugin, and is still family")
	require.NoError(t, daemon.Signal(syscall.SIGKILL))
	assert.True(t, WaitMembers(ms, nil))
	assert.Empty(t, mustFamily(t, p))
}

// forgetTable drops the snapshot: the next look reads the table whole.
func forgetTable() {
	snap.Lock()
	snap.cur = nil
	snap.Unlock()
}

func pidsOf(ms []Member) []int {
	var out []int
	for _, m := range ms {
		out = append(out, m.Pid)
	}
	slices.Sort(out)
	return out
}

// TestInitReapsAnOrphanBehindAPluginsExit: the init reaps an orphan that
// exits while a plugin that exited earlier is still held for its host's
// reap (waitid finds the plugin's exit first, and the init then reads its
// list of children); the plugin stays unreaped until Reap.
func TestInitReapsAnOrphanBehindAPluginsExit(t *testing.T) {
	s := NewSpawner()
	defer s.Close()
	testsupport.NeedNamespace(t, s.Isolation().Err)
	first := startIsolated(t, s, "exit 3", nil)
	<-first.Exited()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	p := startIsolated(t, s, `(setsid sh -c 'echo daemon $$; exec sleep 60' & ) ; sleep 60`, w)
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "daemon "), "it said %q", line)
	ms := waitFamilyOf(t, p, 2, 1)
	var daemon Member
	for _, m := range ms {
		if m.Pgid != p.Pid {
			daemon = m
		}
	}
	d, err := stat(daemon.Pid)
	require.NoError(t, err)
	require.Equal(t, p.ns.pid, d.ppid, "the init adopted the daemon")
	require.NoError(t, daemon.Signal(syscall.SIGKILL))
	require.Eventually(t, func() bool { _, err := stat(daemon.Pid); return err != nil }, 5*time.Second, 5*time.Millisecond,
		"the init reaps the orphan: not even a zombie is left")
	e, err := stat(first.Pid)
	require.NoError(t, err, "the plugin that exited first is held for its host")
	assert.True(t, e.zombie)
	st, err := first.Reap()
	require.NoError(t, err)
	assert.Equal(t, Status{Code: 3}, st)
}

// orphansRole makes this test binary an init's stand-in for
// TestInitLooksBehindAPluginsExit, or a host's for
// TestReaperLooksBehindASpawnersChild: see orphansMain.
const orphansRole = "GRAFT_PROC_TEST_ORPHANS"

// TestInitLooksBehindAPluginsExit: an init's look for orphans that finds a
// plugin's exit first (held for its host's reap, it hides every later
// exit from waitid) says so; made whole, it reads the list of its
// children, and reaps the orphan behind it; the plugin stays unreaped. In
// a process of its own, whose children are the test's alone.
func TestInitLooksBehindAPluginsExit(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), orphansRole+"=1", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "ok\n", string(out))
}

// TestReaperLooksBehindASpawnersChild: the Reaper's look that finds a
// Spawner's child terminated first (its owner reaps it, and it hides
// every later exit from waitid) reads the process table, and reaps the
// orphan behind it; the Spawner's child is left to its owner. In a
// process of its own, whose children are the test's alone.
func TestReaperLooksBehindASpawnersChild(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), orphansRole+"=reaper", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "ok\n", string(out))
}

// orphansMain forks two children from one thread, so that waitid finds
// them in that order, lets both exit, makes the first a plugin of an
// initState, and has it look for orphans.
func orphansMain() int {
	goruntime.LockOSThread()
	fork := func(code string) int {
		pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", "exit " + code}, &syscall.ProcAttr{})
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		for !exited(pid) {
			time.Sleep(time.Millisecond)
		}
		return pid
	}
	plugin, orphan := fork("3"), fork("4")
	if os.Getenv(orphansRole) == "reaper" {
		registry.Lock()
		registry.pids[plugin] = true // a Spawner's child
		registry.Unlock()
		reapOrphans()
		return onlyTheOrphanReaped(orphan, plugin, "the Spawner's child")
	}
	in := &initState{held: map[int]*heldPlugin{plugin: {keep: -1, host: plugin}}, hosts: map[int]bool{plugin: true}, self: os.Getpid()}
	if in.reapOrphans(false) {
		fmt.Println("a look not whole said it saw every exit")
		return 1
	}
	if _, err := stat(orphan); err != nil {
		fmt.Println("a look not whole reaped behind the plugin's exit:", err)
		return 1
	}
	if !in.reapOrphans(true) {
		fmt.Println("a whole look said it did not see every exit")
		return 1
	}
	return onlyTheOrphanReaped(orphan, plugin, "the plugin")
}

// onlyTheOrphanReaped is the exit status of a child that checks that
// orphan was reaped and kept, a zombie, was not; it prints ok, or what is
// wrong.
func onlyTheOrphanReaped(orphan, kept int, what string) int {
	if _, err := stat(orphan); err == nil {
		fmt.Println("the orphan was not reaped")
		return 1
	}
	if e, err := stat(kept); err != nil || !e.zombie {
		fmt.Println(what, "was reaped:", err)
		return 1
	}
	fmt.Println("ok")
	return 0
}
