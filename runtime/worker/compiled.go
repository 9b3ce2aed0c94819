package worker

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// compiled is a module compiled in the runtime of its memory limit, kept
// while instances of it run, so that a start only instantiates, and, once
// the last has returned, among the idleCompiled last used, so that a
// restart does not load it again; older ones are closed, so the code of
// builds no longer run is not kept for the life of the host. Starting one
// again loads it from the compilation cache.
type compiled struct {
	key   compiledKey
	mod   wazero.CompiledModule
	users int // instances whose goroutine has not returned, and starts under way
}

type compiledKey struct {
	pages uint32
	sum   [sha256.Size]byte
}

// idleCompiled is how many compiled modules no instance runs are kept.
const idleCompiled = 4

// compiledAs returns the runtime of a memory limit and the module of
// digest compiled in it, if an instance of it runs or it is among the idle
// ones; nil if it must be compiled. Found, the caller owes a release.
func (w *Worker) compiledAs(pages uint32, digest [sha256.Size]byte) (wazero.Runtime, *compiled, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, nil, errors.New("placement closed")
	}
	c := w.compiled[compiledKey{pages: pages, sum: digest}]
	if c == nil {
		return nil, nil, nil
	}
	w.use(c)
	return w.runtimes[pages], c, nil
}

// compile returns the runtime of a memory limit, made on first use with
// WASI, and the module compiled in it, compiled unless an instance of it
// runs (from the compilation cache when it holds it). The caller owes a
// release.
func (w *Worker) compile(pages uint32, bin []byte) (wazero.Runtime, *compiled, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, nil, errors.New("placement closed")
	}
	rt := w.runtimes[pages]
	if rt == nil {
		cfg := wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithCompilationCache(w.cache).
			WithMemoryLimitPages(pages)
		rt = wazero.NewRuntimeWithConfig(context.Background(), cfg)
		if _, err := wasi_snapshot_preview1.Instantiate(context.Background(), rt); err != nil {
			rt.Close(context.Background())
			return nil, nil, err
		}
		w.runtimes[pages] = rt
	}
	key := compiledKey{pages: pages, sum: sha256.Sum256(bin)}
	c := w.compiled[key]
	if c == nil {
		mod, err := rt.CompileModule(context.Background(), bin)
		if err != nil {
			return nil, nil, err
		}
		c = &compiled{key: key, mod: mod}
		w.compiled[key] = c
	}
	w.use(c)
	return rt, c, nil
}

// use begins one use of c, which is then no longer idle.
func (w *Worker) use(c *compiled) {
	if c.users == 0 {
		w.idle = slices.DeleteFunc(w.idle, func(i *compiled) bool { return i == c })
	}
	c.users++
}

// release ends one use of c; after the last, c is idle, and the oldest
// idle module beyond idleCompiled is closed. Only once an instance's
// goroutine has returned is its use ended: closing the code a module
// still runs in (one blocked in a host call) would free it under that
// call.
func (w *Worker) release(c *compiled) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c.users--; c.users > 0 || w.compiled[c.key] != c {
		return
	}
	w.idle = append(w.idle, c)
	for len(w.idle) > idleCompiled {
		old := w.idle[0]
		w.idle = w.idle[1:]
		delete(w.compiled, old.key)
		old.mod.Close(context.Background())
	}
}

// busy reports whether an instance in the runtime of pages has not
// returned; that runtime is then left open by Close.
func (w *Worker) busy(pages uint32) bool {
	for key, c := range w.compiled {
		if key.pages == pages && c.users > 0 {
			return true
		}
	}
	return false
}
