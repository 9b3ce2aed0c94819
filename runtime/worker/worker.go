// Package worker runs plugins as WebAssembly (WASI preview 1) modules
// inside the host, on wazero, and stops them in graft's order
// (docs/stopping.md, "The stop sequence"): stdin closed, then the module
// closed.
package worker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/hashicorp/go-multierror"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/graftland/graft/instance"
	"github.com/graftland/graft/internal/contentdigest"
	"github.com/graftland/graft/internal/linearmem"
	"github.com/graftland/graft/internal/ready"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

// Options configures a Worker placement.
type Options struct {
	// Timing holds the stop's windows; zero fields get
	// runtime.DefaultTiming's. KillAfter does not apply: a module is closed
	// at once.
	Timing runtime.Timing
	// CacheDir keeps compiled modules, by content, so a restart does not
	// compile again; "" keeps them in memory.
	CacheDir string
}

// Worker is the placement of plugins that run as WebAssembly modules in
// the host's own process.
type Worker struct {
	timing runtime.Timing
	cache  wazero.CompilationCache
	// digests spares a start the read and hash of a module file that has
	// not changed (see digestOf).
	digests *contentdigest.Cache

	mu     sync.Mutex
	live   map[*module]bool
	closed bool
	// One wazero runtime per memory limit (a runtime-wide setting), and
	// each module compiled once per runtime while instances of it run: a
	// start only instantiates (see compiled.go).
	runtimes map[uint32]wazero.Runtime
	compiled map[compiledKey]*compiled
	idle     []*compiled // compiled modules no instance runs, the oldest first
}

var _ runtime.Placement = (*Worker)(nil)

// New returns a Worker placement.
func New(opt Options) (*Worker, error) {
	d := runtime.DefaultTiming()
	t := opt.Timing
	if t.ShutdownTimeout <= 0 {
		t.ShutdownTimeout = d.ShutdownTimeout
	}
	if t.ExitWindow <= 0 {
		t.ExitWindow = d.ExitWindow
	}
	cache := wazero.NewCompilationCache()
	if opt.CacheDir != "" {
		var err error
		if cache, err = wazero.NewCompilationCacheWithDir(opt.CacheDir); err != nil {
			return nil, fmt.Errorf("open the module cache: %w", err)
		}
	}
	return &Worker{timing: t, cache: cache, digests: contentdigest.New(""), live: map[*module]bool{},
		runtimes: map[uint32]wazero.Runtime{}, compiled: map[compiledKey]*compiled{}}, nil
}

// Start compiles the plugin's module (or takes it from the cache), and
// instantiates it on its own goroutine with its args, env, mounts and
// memory limit, and graft's identity variables. It returns once the
// module runs and, if the plugin has a ready check, is ready. See
// runtime.Placement.
func (w *Worker) Start(ctx context.Context, req runtime.Request) (runtime.Handle, error) {
	p := req.Plugin
	if req.Output == nil {
		return nil, errors.New("worker: start without an output")
	}
	var seen <-chan struct{}
	req.Output, seen = ready.Watch(req.Launch.Ready, req.Output)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rt, code, err := w.load(req.Path(p.Module), p.Module, memoryPages(p.Memory))
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", p.Name, err)
	}
	// The instance's own context: cancelled, it closes the instance
	// wherever it is, a busy loop included.
	run, kill := context.WithCancel(context.Background())
	// Its linear memory outside the Go heap, grown in place (see
	// linearmem); wazero frees it only on the instance's goroutine, or
	// when Close closes a runtime no instance is in.
	run = experimental.WithMemoryAllocator(run, linearmem.Allocator())
	fail := func(what string, err error) (runtime.Handle, error) {
		kill()
		w.release(code)
		return nil, fmt.Errorf("start %s: %s: %w", p.Name, what, err)
	}
	// An *os.File for stdin, not an io.Pipe: wazero polls a file, so Go
	// modules can wait for stdin on one goroutine and work on others.
	stdin, eof, err := os.Pipe()
	if err != nil {
		return fail("stdin", err)
	}
	id := runtime.Identity{ID: uuid.NewString(), Generation: 1}
	if req.Identity != nil {
		id = *req.Identity
	}
	cfg := moduleConfig(run, req, id, stdin)

	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		stdin.Close()
		eof.Close()
		return fail("worker", errors.New("placement closed"))
	}
	m := newModule(p.Name, id, w.timing, req.Output, eof, kill)
	w.live[m] = true
	w.mu.Unlock()
	go m.run(run, rt, code.mod, cfg, stdin, w.forget, func() { w.release(code) })

	if err := wait(ctx, m, req, seen); err != nil {
		return nil, err
	}
	m.health = ready.HealthChecks(req.Launch.Health, nil, m.done, nil)
	return m, nil
}

// moduleConfig configures an instance of req's module as id: its args,
// stdin, output, clocks, randomness, mounts and environment, graft's
// identity variables included. Its sleeps end when run is cancelled.
func moduleConfig(run context.Context, req runtime.Request, id runtime.Identity, stdin *os.File) wazero.ModuleConfig {
	p := req.Plugin
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs(append([]string{req.Name}, p.Args...)...).
		WithStdin(stdin).
		WithStdout(req.Output).
		WithStderr(req.Output).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(nanosleep(run)).
		WithRandSource(rand.Reader).
		WithFSConfig(mounts(req))
	env := environ(req, id)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		cfg = cfg.WithEnv(k, env[k])
	}
	return cfg
}

// DefaultMemory bounds the linear memory of a worker whose plugin sets no
// memory: 256 MiB, so that a worker that leaks or is hostile fails
// (runs out of memory, and its retry applies) long before the host does.
const DefaultMemory = 256 << 20

// memoryPages is a memory limit in WebAssembly pages of 64 KiB, rounded
// up; zero is DefaultMemory, and no limit is above WebAssembly's 4 GiB.
func memoryPages(memory spec.Size) uint32 {
	const page, most = 64 << 10, 1 << 16
	if memory <= 0 {
		memory = DefaultMemory
	}
	return uint32(min((int64(memory)+page-1)/page, most))
}

// forget drops a finished module from the live ones.
func (w *Worker) forget(m *module) {
	w.mu.Lock()
	delete(w.live, m)
	w.mu.Unlock()
}

// Close stops every module still running, as Stop does, closes the
// runtimes, but for one an instance has not returned from (see
// killWait), and closes the compilation cache.
func (w *Worker) Close() error {
	w.mu.Lock()
	w.closed = true
	var live []*module
	for m := range w.live {
		select {
		case <-m.stop: // its stop is under way, and its result its caller's
		default:
			live = append(live, m)
		}
	}
	w.mu.Unlock()
	errs := multierror.Append(nil, runtime.StopAll(context.Background(), live))
	w.mu.Lock()
	for pages, rt := range w.runtimes {
		if w.busy(pages) {
			continue // an instance has not returned: its code must stay (see release)
		}
		if err := rt.Close(context.Background()); err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	w.mu.Unlock()
	if err := w.cache.Close(context.Background()); err != nil {
		errs = multierror.Append(errs, err)
	}
	return errs.ErrorOrNil()
}

// environ is a module's environment: what its inheritEnv passes on of the
// host's, the spec's env, the request's, then graft's identity. A module
// sees nothing else of the host's environment, not even a base.
func environ(req runtime.Request, id runtime.Identity) map[string]string {
	env := map[string]string{}
	for _, kv := range runtime.Inherited(os.Environ(), req.Launch.InheritEnv) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	maps.Copy(env, req.Launch.Env)
	maps.Copy(env, req.Env)
	env[instance.EnvID] = id.ID
	env[instance.EnvGeneration] = strconv.FormatInt(id.Generation, 10)
	env[instance.EnvPlugin] = req.Name
	return env
}
