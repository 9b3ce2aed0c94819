//go:build linux

package main

import (
	"context"
	"crypto/rand"
	"log"
	"os"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/graftland/graft/internal/linearmem"
	"github.com/graftland/graft/runtime/worker"
)

// floor is bare wazero with the settings the worker placement uses: one
// runtime of the default memory limit, closed on its context's end, on the
// same compilation cache, with WASI, and linear memory from linearmem
// (unless wazeroMemory); the module compiled once; each
// instance on a goroutine of its own with a pipe for stdin, kept alive and
// idle as a worker is. It has none of graft's work: no identity, no
// environment, no ready or health checks, no stop ladder, no logs.
type floor struct {
	rt   wazero.Runtime
	code wazero.CompiledModule
	args []string
	runs sync.WaitGroup
	eofs []*os.File
	mu   sync.Mutex
	mems []api.Memory
	stop context.CancelFunc
}

// wazeroMemory gives the floor wazero's own linear memory, Go slices, as
// the placement had before it used linearmem.
var wazeroMemory bool

// newFloor compiles bin (from cache, which the placement filled) in a
// runtime configured as the placement configures its own.
func newFloor(cache wazero.CompilationCache, bin []byte, args []string) (*floor, error) {
	const page = 64 << 10
	cfg := wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithCompilationCache(cache).
		WithMemoryLimitPages(worker.DefaultMemory / page)
	rt := wazero.NewRuntimeWithConfig(context.Background(), cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(context.Background(), rt); err != nil {
		rt.Close(context.Background())
		return nil, err
	}
	code, err := rt.CompileModule(context.Background(), bin)
	if err != nil {
		rt.Close(context.Background())
		return nil, err
	}
	return &floor{rt: rt, code: code, args: args}, nil
}

// start instantiates n instances, each writing to out.
func (f *floor) start(n int, out func(int) *firstLine) error {
	ctx, stop := context.WithCancel(context.Background())
	f.stop = stop
	if !wazeroMemory {
		ctx = experimental.WithMemoryAllocator(ctx, linearmem.Allocator())
	}
	for i := range n {
		stdin, eof, err := os.Pipe()
		if err != nil {
			return err
		}
		f.eofs = append(f.eofs, eof)
		o := out(i)
		cfg := wazero.NewModuleConfig().WithName("").WithArgs(f.args...).
			WithStdin(stdin).WithStdout(o).WithStderr(o).
			WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader)
		f.runs.Add(1)
		go func() {
			defer f.runs.Done()
			defer stdin.Close()
			// Its _start called here as InstantiateModule would call it,
			// so that its memory can be read.
			mod, err := f.rt.InstantiateModule(ctx, f.code, cfg.WithStartFunctions())
			if err != nil {
				log.Fatal(err)
			}
			f.mu.Lock()
			f.mems = append(f.mems, mod.Memory())
			f.mu.Unlock()
			mod.ExportedFunction("_start").Call(ctx)
			mod.Close(context.Background())
		}()
	}
	return nil
}

// linear is the size of the instances' linear memories: the heap of the
// Go runtime each carries. Read while they idle.
func (f *floor) linear() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, m := range f.mems {
		n += int64(m.Size())
	}
	return n
}

// close ends every instance as graft's stop does, stdin first, then the
// runtime, and waits for their goroutines.
func (f *floor) close() {
	for _, eof := range f.eofs {
		eof.Close()
	}
	f.runs.Wait()
	f.stop()
	f.rt.Close(context.Background())
}
