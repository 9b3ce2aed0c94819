//go:build linux

package fencing_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const wait = 30 * time.Second // generous: the race detector and a busy machine are slow

// TestFencing plays the story of docs/semantics.md, "Fencing", with the
// real programs: writer A (generation 1) writes, freezes, is replaced by
// writer B (generation 2), and wakes up; the ledger rejects A from then on.
func TestFencing(t *testing.T) {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./ledger", "./writer")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	ledger := start(t, filepath.Join(bin, "ledger"), nil,
		"-listen", "127.0.0.1:0", "-file", filepath.Join(t.TempDir(), "ledger.json"))
	addr := ledger.waitFor(t, regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)$`))[1]

	writer := func(gen int) *proc {
		return start(t, filepath.Join(bin, "writer"), []string{
			"LEDGER_ADDR=" + addr,
			"GRAFT_INSTANCE_ID=shop.writer",
			"GRAFT_GENERATION=" + strconv.Itoa(gen),
		}, "-every", "300ms")
	}

	a := writer(1)
	a.waitFor(t, regexp.MustCompile(`^wrote generation=1 n=\d+$`))
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	// What A had written when it froze. A request it had sent before
	// SIGSTOP may still be admitted: A then reports it once it wakes.
	frozenAt := len(a.lines())

	b := writer(2)
	b.waitFor(t, regexp.MustCompile(`^wrote generation=2 n=\d+$`))
	before := writesOf(t, addr, 1)

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	a.waitFor(t, regexp.MustCompile(`^rejected: stale generation 1 for key "orders": generation 2 was already seen`))
	wrote := regexp.MustCompile(`^wrote generation=1 n=(\d+)$`)
	for _, l := range a.lines()[frozenAt:] {
		if m := wrote.FindStringSubmatch(l); m != nil {
			assert.Contains(t, before, m[1], "after B wrote, A reports a write the ledger accepted only before: %q", l)
		}
		if strings.HasPrefix(l, "rejected:") {
			break
		}
	}
	assert.Equal(t, before, writesOf(t, addr, 1), "no write of generation 1 is accepted after B's")

	// The accepted writes never go back from generation 2 to 1.
	writes := getWrites(t, addr)
	for i := 1; i < len(writes); i++ {
		assert.GreaterOrEqual(t, writes[i].Generation, writes[i-1].Generation, "write %d of %v", i, writes)
	}
	assert.Contains(t, ledger.lines(), "rejected key=orders owner=shop.writer generation=1 highest=2")

	// Both programs stop cleanly on SIGTERM.
	for _, p := range []*proc{a, b, ledger} {
		assert.NoError(t, p.stop(), "%s:\n%s", p.cmd.Path, strings.Join(p.lines(), "\n"))
	}
}

// client keeps no connection open after a request, so no goroutine of
// it outlives the test (goleak).
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: wait}

type write struct {
	Key        string `json:"key"`
	Owner      string `json:"owner"`
	Generation int64  `json:"generation"`
	Value      string `json:"value"`
}

func getWrites(t *testing.T, addr string) []write {
	t.Helper()
	resp, err := client.Get("http://" + addr + "/writes")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var writes []write
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&writes))
	return writes
}

// writesOf returns the values of the accepted writes of generation gen.
func writesOf(t *testing.T, addr string, gen int64) []string {
	t.Helper()
	var values []string
	for _, w := range getWrites(t, addr) {
		if w.Generation == gen {
			values = append(values, w.Value)
		}
	}
	return values
}

// proc is a program the test started, with the lines of its output.
type proc struct {
	cmd  *exec.Cmd
	out  *lineBuffer
	done chan struct{} // closed when cmd.Wait returned
	err  error         // what cmd.Wait returned
}

// start starts the program at path, with env added to the test's
// environment, and stops it when the test ends, whatever happened.
func start(t *testing.T, path string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	out := &lineBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Logf("%s: %v", path, err)
		}
	})
	return p
}

// stop asks the program to stop (SIGCONT first, in case it is frozen, then
// SIGTERM), kills it if it has not within a few seconds, and returns how
// it exited. Safe to call again: it then only returns that.
func (p *proc) stop() error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	p.cmd.Process.Signal(syscall.SIGCONT)
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(5 * time.Second):
	}
	p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("did not stop within 5s of SIGTERM: killed (%v)", p.err)
}

func (p *proc) lines() []string { return p.out.lines() }

// waitFor waits for a line of output matching re, and returns the match
// and its submatches.
func (p *proc) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		for _, l := range p.lines() {
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		}
		select {
		case <-p.done:
			require.FailNow(t, "exited before printing "+re.String(), "%s: %v\n%s", p.cmd.Path, p.err, strings.Join(p.lines(), "\n"))
		default:
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "no line matches "+re.String(), "%s after %s:\n%s", p.cmd.Path, wait, strings.Join(p.lines(), "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lineBuffer collects what a program writes, as lines.
type lineBuffer struct {
	mu      sync.Mutex
	partial []byte
	done    []string
}

func (b *lineBuffer) Write(data []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.partial = append(b.partial, data...)
	for {
		i := bytes.IndexByte(b.partial, '\n')
		if i < 0 {
			return len(data), nil
		}
		b.done = append(b.done, string(b.partial[:i]))
		b.partial = b.partial[i+1:]
	}
}

func (b *lineBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string{}, b.done...)
}
