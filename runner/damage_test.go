//go:build linux

package runner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/runnerapi"
)

// damages are the ways a start entry of the journal is damaged in these
// tests: a byte of its checksummed part flipped, so that its sum no
// longer matches; where it falls decides what of the entry can be read.
var damages = []struct {
	name string
	at   string // the bytes of the entry's JSON whose first is flipped
	why  string // what the report says of the entry
}{
	{"its invocation id", `"invocation":"`, "bad checksum"},
	{"its instance", `"instance":"`, "bad checksum"},
	{"its JSON", `{"op"`, "bad checksum"},
	{"its op", `"op":"`, "bad checksum"},
	{"its checksum", "", "bad checksum"},
}

// TestRecoverDamagedStart: a runner without PID namespaces starts a
// plugin whose grandchild leaves for a session of its own, and is killed
// with SIGKILL; the start entry of that plugin in its journal is damaged
// (a byte flipped) before the next runner opens the state dir. The
// grandchild, found by the invocation id of its start (in the pid entry
// that followed, or in what can be read of the damaged entry), is
// stopped before its instance starts again, and the runner reports the
// damaged entry, naming the journal, the entry, and the process it
// stopped.
func TestRecoverDamagedStart(t *testing.T) {
	for _, dmg := range damages {
		t.Run(dmg.name, func(t *testing.T) {
			dir, entry, escaped := damagedRun(t, true, dmg.at)
			h := newHarness(t, Options{Lease: short.Lease, Grace: short.Grace, NoNamespace: true}, dir)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the runner's log: %s", h.log)
				}
			})
			testsupport.WaitGone(t, 10*time.Second, escaped)
			want := fmt.Sprintf("journal entry %d of k.dmg is damaged (%s); found its process %d by invocation id and stopped it", entry, dmg.why, escaped)
			require.True(t, h.log.WaitFor(want, 5*time.Second), "want %q in the log: %s", want, h.log)
			assert.Contains(t, h.log.String(), "journal="+journalPath(dir), "the report names the journal")
			m := h.scrape()
			assert.Equal(t, 1.0, m["graft_runner_damaged_entries_total"], "counted")
			assert.Equal(t, 1.0, m[`graft_runner_recoveries_total{result="stopped"}`], "its process stopped")

			sess := h.open(0)
			st := h.start("k.dmg", plugin(t, sess, "cooperative"))
			assert.Equal(t, int64(2), st.Generation, "its generation was taken")
		})
	}
}

// TestRecoverDamagedStartInNamespace: the same with the runner's PID
// namespace, where the kernel kills everything of the plugin with the
// runner and no pid entry is written: the next runner still looks for
// its process, by what it can read of the damaged entry, finds it gone,
// and says so.
func TestRecoverDamagedStartInNamespace(t *testing.T) {
	s := proc.NewSpawner()
	iso := s.Isolation()
	s.Close()
	testsupport.NeedNamespace(t, iso.Err)
	for _, dmg := range damages {
		t.Run(dmg.name, func(t *testing.T) {
			dir, entry, _ := damagedRun(t, false, dmg.at)
			h := newHarness(t, short, dir)
			name := "k.dmg"
			if dmg.name == "its instance" {
				name = "k.emg" // what it reads as its instance, one bit off
			}
			// Where its invocation id is damaged, no process carries the
			// id it reads; there is no pid entry with the right one.
			want := fmt.Sprintf("journal entry %d of %s is damaged (%s); no process carries its invocation id: it is gone", entry, name, dmg.why)
			require.True(t, h.log.WaitFor(want, 5*time.Second), "want %q in the log: %s", want, h.log)
			m := h.scrape()
			assert.Equal(t, 1.0, m["graft_runner_damaged_entries_total"], "counted")
			assert.Equal(t, 0.0, m[`graft_runner_recoveries_total{result="stopped"}`], "nothing to stop")
			assert.Equal(t, 2.0, m[`graft_runner_recoveries_total{result="gone"}`], "k.dmg and k.other were gone")

			sess := h.open(0)
			st := h.start(name, plugin(t, sess, "cooperative"))
			assert.Equal(t, int64(2), st.Generation, "the generation it reads was taken")
		})
	}
}

// damagedRun runs a runner daemon on a fresh state dir (without PID
// namespaces when noNamespace) that starts instance k.other, then k.dmg, a plugin whose
// grandchild leaves for a session of its own, and kills it with SIGKILL;
// then flips the byte at the first at (empty: the first byte of the
// checksum) in the start entry of k.dmg in its journal. It returns the
// state dir, the entry's number (from 1) and the grandchild's pid, which
// outlives the runner without a namespace. Whatever of the test's
// processes is left at its end is killed.
func damagedRun(t *testing.T, noNamespace bool, at string) (dir string, entry, escaped int) {
	dir = t.TempDir()
	t.Cleanup(func() { killLeft(t) })
	var env []string
	if noNamespace {
		env = append(env, noNamespaceEnv+"=1")
	}
	d, line := launchDaemon(t, dir, filepath.Join(dir, "r.sock"), short.Grace, nil, env...)
	require.Equal(t, "ready\n", line, "log: %s", d.log)
	sess := d.open(0)
	ev := d.events(sess)
	d.start("k.other", plugin(t, sess, "cooperative")) // entries before the damaged one
	ev.ready(t)
	st := d.start("k.dmg", plugin(t, sess, "daemon"))
	evs := ev.until(t, 5*time.Second, func(e runnerapi.Event) bool { return strings.HasPrefix(e.Line, "daemon ") })
	escaped = atoi(t, strings.TrimPrefix(evs[len(evs)-1].Line, "daemon "))
	ev.close()
	d.kill()
	if noNamespace {
		testsupport.WaitGone(t, 5*time.Second, st.PID)
		require.True(t, alive(escaped), "the escaped grandchild outlived the runner")
	} else {
		testsupport.WaitGone(t, 5*time.Second, st.PID, escaped)
	}
	return dir, damageStart(t, journalPath(dir), "k.dmg", at), escaped
}

// damageStart flips the byte at the first at (empty: the checksum's
// first) in the start entry of instance in the journal at path, and
// returns the entry's number, from 1.
func damageStart(t *testing.T, path, instance, at string) int {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := bytes.SplitAfter(data, []byte{'\n'})
	for i, line := range lines {
		e, ok := decodeEntry(bytes.TrimSuffix(line, []byte{'\n'}))
		if !ok || e.Op != opStart || e.Instance != instance {
			continue
		}
		off := 0
		if at != "" {
			off = bytes.Index(line, []byte(at))
			require.GreaterOrEqual(t, off, 9, "%q in %q", at, line)
			if at[len(at)-1] == '"' {
				off += len(at) + 2 // a byte inside the value
			}
		}
		line[off] ^= 1
		_, ok = decodeEntry(bytes.TrimSuffix(line, []byte{'\n'}))
		require.False(t, ok, "damaged: %q", line)
		require.NoError(t, os.WriteFile(path, bytes.Join(lines, nil), 0o600))
		return i + 1
	}
	t.Fatalf("no start entry of %s in %q", instance, data)
	return 0
}

// killLeft kills whatever of the test's processes still runs
// (killMarked), and waits until it is gone.
func killLeft(t *testing.T) {
	var pids []int
	for _, p := range marked(t) {
		pids = append(pids, p.pid)
	}
	killMarked(t)
	testsupport.WaitGone(t, 5*time.Second, pids...)
}
