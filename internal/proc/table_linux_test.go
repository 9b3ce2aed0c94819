package proc

import (
	"bufio"
	"os"
	"slices"
	"syscall"
	"testing"

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
	for _, m := range ms {
		if m.Pgid != p.Pid {
			daemon = m
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
