package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/linearmem"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/runtime/runtimetest"
	"github.com/graftland/graft/spec"
)

// plugWasm is testdata/plug built for wasip1, once per test binary;
// sharedCache keeps it compiled across the tests' placements.
var plugWasm, sharedCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "graft-worker-test")
	if err != nil {
		panic(err)
	}
	plugWasm = filepath.Join(dir, "plug.wasm")
	sharedCache = filepath.Join(dir, "cache")
	build := exec.Command("go", "build", "-o", plugWasm, "./testdata/plug")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the test module: %v\n%s", err, out)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	runtimetest.Main(m)
}

var short = runtime.Timing{ShutdownTimeout: 400 * time.Millisecond, ExitWindow: 150 * time.Millisecond}

func plug(name, role string) *spec.Plugin {
	return &spec.Plugin{Name: name, Run: spec.Worker, Module: plugWasm, Args: []string{role}}
}

func newWorker(t *testing.T, timing runtime.Timing) *Worker {
	w, err := New(Options{Timing: timing, CacheDir: sharedCache})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, w.Close()) })
	return w
}

func start(t *testing.T, w *Worker, p *spec.Plugin, out *runtimetest.Recorder) runtime.Handle {
	t.Helper()
	h, err := w.Start(context.Background(), runtime.Request{Project: "test", Dir: t.TempDir(), Output: out}.For(p))
	require.NoError(t, err)
	return h
}

func TestConformance(t *testing.T) {
	warm(t)
	runtimetest.Run(t, runtimetest.Kit{
		New: func(t *testing.T, timing runtime.Timing) runtime.Placement {
			w, err := New(Options{Timing: timing, CacheDir: sharedCache})
			require.NoError(t, err)
			return w
		},
		Plugin: func(t *testing.T, name string, b runtimetest.Behavior) *spec.Plugin {
			return plug(name, string(b))
		},
		Timing:     short,
		Forced:     func(err error) bool { var e *runtime.LocalTerminationTimeout; return errors.As(err, &e) },
		Generation: 1,
		Gone:       func(t *testing.T, h runtime.Handle) bool { return true }, // Done: its goroutine returned
	})
}

// warm compiles the test module into sharedCache: the conformance suite
// runs its fixed windows beside its other cases, which would otherwise
// each compile it at once, two long compilations competing for the
// machine with the timing of every other test.
func warm(t *testing.T) {
	w := newWorker(t, short)
	out := runtimetest.NewRecorder()
	h := start(t, w, plug("warm", "cooperative"), out)
	require.True(t, out.WaitFor("ready", 10*time.Second), "output: %q", out.Tail())
	_, err := h.Stop(context.Background())
	require.NoError(t, err)
}

// TestBusyLoopIsClosed: a module that ignores the end of stdin and spins
// in a busy loop is closed once its exit window is over, with
// LocalTerminationTimeout. The windows themselves, with the real
// durations, are the conformance suite's (runtimetest, FixedWindows).
func TestBusyLoopIsClosed(t *testing.T) {
	w := newWorker(t, short)
	out := runtimetest.NewRecorder()
	h := start(t, w, plug("spin", "stubborn"), out)
	require.True(t, out.WaitFor("ready", 10*time.Second))
	outcome, err := h.Stop(context.Background())
	assert.Equal(t, runtime.Killed, outcome)
	var timeout *runtime.LocalTerminationTimeout
	require.ErrorAs(t, err, &timeout)
	assert.Equal(t, short.ExitWindow, timeout.Window)
	assert.Equal(t, "terminated", h.Exit().Error)
	assert.Contains(t, out.Tail(), "ignoring the end of stdin")
}

// trapWasm is a module whose _start executes unreachable: a trap.
var trapWasm = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: () -> ()
	0x03, 0x02, 0x01, 0x00, // functions: one of type 0
	0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00, // export _start
	0x0a, 0x05, 0x01, 0x03, 0x00, 0x00, 0x0b, // code: unreachable, end
}

// TestTrap: a module that traps fails with the trap as its exit; the
// placement goes on serving.
func TestTrap(t *testing.T) {
	w := newWorker(t, short)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trap.wasm"), trapWasm, 0o644))
	h, err := w.Start(context.Background(), runtime.Request{Dir: dir, Output: runtimetest.NewRecorder()}.For(&spec.Plugin{Name: "trap", Run: spec.Worker, Module: "trap.wasm"}))
	require.NoError(t, err)
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a trap is not seen")
	}
	exit := h.Exit()
	assert.False(t, exit.Success())
	assert.Contains(t, exit.Error, "unreachable")
	assert.Equal(t, -1, exit.Code)

	out := runtimetest.NewRecorder()
	again := start(t, w, plug("after", "cooperative"), out)
	require.True(t, out.WaitFor("ready", 10*time.Second), "the placement still serves")
	_, err = again.Stop(context.Background())
	require.NoError(t, err)
}

// TestMemoryLimit: a module over its memory limit fails, cleanly.
func TestMemoryLimit(t *testing.T) {
	w := newWorker(t, short)
	p := plug("hog", "hog")
	p.Memory = 64 << 20
	out := runtimetest.NewRecorder()
	h := start(t, w, p, out)
	select {
	case <-h.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the module was not stopped at its limit")
	}
	exit := h.Exit()
	assert.False(t, exit.Success())
	assert.Equal(t, 2, exit.Code, "the Go runtime exits 2 when it runs out of memory: %v %q", exit, exit.Tail)
	assert.Contains(t, out.Tail(), "fatal error: out of memory")
}

// TestMounts: a module sees its mounts, read-only unless writable, and no
// other host file.
func TestMounts(t *testing.T) {
	w := newWorker(t, short)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "in"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "out"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in", "hello.txt"), []byte("hi"), 0o644))
	p := plug("files", "mounts")
	p.Mounts = []spec.Mount{{Host: "in", Guest: "/in"}, {Host: "out", Guest: "/out", Writable: true}}
	out := runtimetest.NewRecorder()
	h, err := w.Start(context.Background(), runtime.Request{Dir: dir, Output: out}.For(p))
	require.NoError(t, err)
	<-h.Done()
	assert.True(t, h.Exit().Success(), "%v", h.Exit())
	assert.Equal(t, []string{`read "hi" <nil>`, "write /in: true", "write /out: <nil>", "host files hidden: true"}, out.Tail())
	b, err := os.ReadFile(filepath.Join(dir, "out", "result.txt"))
	require.NoError(t, err)
	assert.Equal(t, "done", string(b))
	assert.NoFileExists(t, filepath.Join(dir, "in", "nope.txt"))
}

// TestCompilationCache: a second placement on the same cache starts a
// module without compiling it again.
func TestCompilationCache(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	timeStart := func() time.Duration {
		w, err := New(Options{Timing: short, CacheDir: cache})
		require.NoError(t, err)
		defer w.Close()
		out := runtimetest.NewRecorder()
		began := time.Now()
		h, err := w.Start(context.Background(), runtime.Request{Dir: t.TempDir(), Output: out}.For(plug("c", "cooperative")))
		require.NoError(t, err)
		require.True(t, out.WaitFor("ready", 30*time.Second))
		took := time.Since(began)
		_, err = h.Stop(context.Background())
		require.NoError(t, err)
		return took
	}
	cold := timeStart()
	warm := timeStart()
	t.Logf("cold start %s, warm start %s", cold, warm)
	ents, err := os.ReadDir(cache)
	require.NoError(t, err)
	assert.NotEmpty(t, ents, "compiled modules are kept in the cache dir")
	assert.Less(t, warm, cold/2, "the warm start did not compile")
}

func TestStartErrors(t *testing.T) {
	w := newWorker(t, short)
	dir := t.TempDir()
	_, err := w.Start(context.Background(), runtime.Request{Dir: dir, Output: runtimetest.NewRecorder()}.For(&spec.Plugin{Name: "nope", Run: spec.Worker, Module: "nope.wasm"}))
	assert.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.wasm"), []byte("not wasm"), 0o644))
	_, err = w.Start(context.Background(), runtime.Request{Dir: dir, Output: runtimetest.NewRecorder()}.For(&spec.Plugin{Name: "bad", Run: spec.Worker, Module: "bad.wasm"}))
	assert.ErrorContains(t, err, "start bad: compile bad.wasm: ")
}

// TestSleeperIsClosed: a module blocked in a host call, a sleep (Go's
// time.Sleep is a poll_oneoff with a clock subscription), is stopped in
// its stop sequence like a busy loop: the end of stdin ignored, the
// graceful stop and the exit window waited out, then the module closed
// where it sleeps, its goroutine returned: Killed, with a
// LocalTerminationTimeout, within the windows.
func TestSleeperIsClosed(t *testing.T) {
	for _, role := range []string{"sleeper", "napper"} {
		t.Run(role, func(t *testing.T) {
			w := newWorker(t, short)
			out := runtimetest.NewRecorder()
			h := start(t, w, plug(role, role), out)
			require.True(t, out.WaitFor("ready", 10*time.Second))
			began := time.Now()
			type result struct {
				outcome runtime.Outcome
				err     error
			}
			stopped := make(chan result, 1)
			go func() {
				outcome, err := h.Stop(context.Background())
				stopped <- result{outcome, err}
			}()
			var r result
			select {
			case r = <-stopped:
			case <-time.After(30 * time.Second):
				t.Fatal("the stop of a sleeping module never ended")
			}
			took := time.Since(began)
			t.Logf("closed after %s", took)
			assert.Equal(t, runtime.Killed, r.outcome)
			var timeout *runtime.LocalTerminationTimeout
			require.ErrorAs(t, r.err, &timeout)
			assert.NotContains(t, r.err.Error(), "still running")
			window := short.ShutdownTimeout + short.ExitWindow
			assert.GreaterOrEqual(t, took, window)
			assert.Less(t, took, window+2*time.Second)
			select {
			case <-h.Done():
			default:
				t.Fatal("Stop returned before the module's end")
			}
			assert.Equal(t, "terminated", h.Exit().Error)
			assert.NotContains(t, out.Tail(), "woke up")
		})
	}
}

func TestMemoryPages(t *testing.T) {
	assert.Equal(t, uint32(DefaultMemory/65536), memoryPages(0), "no memory: the default")
	assert.Equal(t, uint32(4096), memoryPages(256<<20))
	assert.Equal(t, uint32(1), memoryPages(1), "rounded up to a page")
	assert.Equal(t, uint32(2), memoryPages(65537))
	assert.Equal(t, uint32(65536), memoryPages(4<<30), "WebAssembly's 4 GiB")
	assert.Equal(t, uint32(65536), memoryPages(1<<62), "never above it, never wrapped")
}

// TestDefaultMemoryLimit: a worker whose plugin sets no memory runs out
// of it at DefaultMemory, and fails cleanly.
func TestDefaultMemoryLimit(t *testing.T) {
	w := newWorker(t, short)
	out := runtimetest.NewRecorder()
	h := start(t, w, plug("hog", "hog"), out)
	select {
	case <-h.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("the module was not stopped at the default limit")
	}
	assert.Equal(t, 2, h.Exit().Code, "%v %q", h.Exit(), h.Exit().Tail)
	assert.Contains(t, out.Tail(), "fatal error: out of memory")
}

// TestClosedWorkersReturnMemory: the memory of a worker is returned once
// it has stopped: forty workers of 32 MiB each, started and stopped one
// after the other (half of them closed, half stopping by themselves), leave
// the host's memory (its Go heap and the linear memory mapped beside it,
// see linearmem) about where it was, not 1.25 GiB larger.
func TestClosedWorkersReturnMemory(t *testing.T) {
	w := newWorker(t, short)
	var live uint64 // the heap while a worker runs
	cycle := func(i int, measure func() uint64) {
		out := runtimetest.NewRecorder()
		h := start(t, w, plug(fmt.Sprintf("b%d", i), "ballast"), out)
		require.True(t, out.WaitFor("ready", 30*time.Second))
		if measure != nil {
			live = measure()
		}
		if i%2 == 0 {
			h.(*module).kill() // closed where it is
		}
		_, err := h.Stop(context.Background())
		require.NoError(t, err)
		<-h.Done()
	}
	heap := func() uint64 {
		var ms goruntime.MemStats
		goruntime.GC()
		goruntime.GC()
		goruntime.ReadMemStats(&ms)
		return ms.HeapAlloc + uint64(linearmem.Mapped())
	}
	cycle(-1, nil) // compile, and warm what the placement keeps
	before := heap()
	for i := range 40 {
		if i == 39 {
			cycle(i, heap)
		} else {
			cycle(i, nil)
		}
	}
	after := heap()
	t.Logf("heap %d MiB before, %d MiB with a worker, %d MiB after", before>>20, live>>20, after>>20)
	require.Greater(t, live, before+32<<20, "the host holds a running worker's memory")
	assert.Less(t, int64(after)-int64(before), int64(96<<20), "the workers' memory was not returned")
}

// TestCompiledCodeReleased: a module's compiled code is kept while an
// instance of it runs, shared by its instances, and then among the
// idleCompiled last used, so a restart does not load it again; older ones
// are closed, so builds no longer run are not kept.
func TestCompiledCodeReleased(t *testing.T) {
	w := newWorker(t, short)
	kept := func() (n int, idle int) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.compiled), len(w.idle)
	}
	run := func(name string, memory spec.Size) {
		p := plug(name, "cooperative")
		p.Memory = memory
		out := runtimetest.NewRecorder()
		h := start(t, w, p, out)
		require.True(t, out.WaitFor("ready", 30*time.Second))
		_, err := h.Stop(context.Background())
		require.NoError(t, err)
	}
	out1, out2 := runtimetest.NewRecorder(), runtimetest.NewRecorder()
	h1 := start(t, w, plug("a", "cooperative"), out1)
	h2 := start(t, w, plug("b", "cooperative"), out2)
	require.True(t, out1.WaitFor("ready", 30*time.Second))
	require.True(t, out2.WaitFor("ready", 30*time.Second))
	n, idle := kept()
	assert.Equal(t, [2]int{1, 0}, [2]int{n, idle}, "one compiled module for both, in use")
	_, err := h1.Stop(context.Background())
	require.NoError(t, err)
	_, err = h2.Stop(context.Background())
	require.NoError(t, err)
	n, idle = kept()
	assert.Equal(t, [2]int{1, 1}, [2]int{n, idle}, "kept, idle, after the last")

	// Other builds (here: other memory limits, each its own compilation)
	// push the oldest idle ones out.
	for i := range idleCompiled + 2 {
		run(fmt.Sprintf("m%d", i), spec.Size(64+i)<<20)
	}
	n, idle = kept()
	assert.Equal(t, [2]int{idleCompiled, idleCompiled}, [2]int{n, idle}, "no more than idleCompiled kept")
	w.mu.Lock()
	for _, c := range w.compiled {
		assert.NotEqual(t, memoryPages(0), c.key.pages, "the oldest, the default limit's, was closed")
	}
	w.mu.Unlock()
	run("again", 0) // and it starts again
}

// TestNoSymlinkOutOfAMount: a module cannot make a symbolic link in a
// writable mount, which the host would resolve: one to a file above the
// mount would show it any host file.
func TestNoSymlinkOutOfAMount(t *testing.T) {
	w := newWorker(t, short)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "out"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("the host's"), 0o600))
	p := plug("escape", "escape")
	p.Mounts = []spec.Mount{{Host: "out", Guest: "/out", Writable: true}}
	out := runtimetest.NewRecorder()
	h, err := w.Start(context.Background(), runtime.Request{Dir: dir, Output: out}.For(p))
	require.NoError(t, err)
	<-h.Done()
	assert.True(t, h.Exit().Success(), "%v", h.Exit())
	require.Len(t, out.Tail(), 2)
	assert.Contains(t, out.Tail()[0], "symlink ../secret.txt /out/up: ")
	assert.NotEqual(t, "symlink: <nil>", out.Tail()[0])
	assert.NotContains(t, out.Tail()[1], "the host's")
	_, err = os.Lstat(filepath.Join(dir, "out", "up"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no link was made")
}
