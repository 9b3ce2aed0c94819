package runner

import (
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/graftland/graft/internal/atomicfile"
)

// The state dir's writes are committed in groups, as a database commits
// its log (docs/runner-api.md, "The state dir"). Each writer writes
// and syncs its own files, at the same time as the others, so that the
// file system commits them together; then the renames of every writer
// waiting are made durable by one sync of each directory: the first
// waiter syncs for itself and for whoever queued behind it meanwhile, and
// whoever queues while it syncs goes in the next group, led by the first
// of them. Nothing waits for a group to fill: a lone write syncs at once.

// fileWrite is one file of the state dir to write whole: through a
// temporary file in its directory, synced, renamed over it, and the
// directory synced, as atomicfile.Write does. err is how it went.
type fileWrite struct {
	path string
	data []byte
	err  error
}

// committer groups the directory syncs of its writers.
type committer struct {
	mu      sync.Mutex
	queue   []*dirWait // waiting for the next group
	leading bool       // a group is under way
}

// dirWait is one writer waiting for the sync of its directories.
type dirWait struct {
	dirs []string
	errs map[string]error // the failed syncs of its dirs, when done
	// lead is set, before wake is closed, when the waiter is to lead the
	// next group rather than being done.
	lead bool
	wake chan struct{}
}

// write writes ws, durably, and returns once each is on disk or has
// failed (its err). Their files are synced together, and their
// directories in a group with other writers'.
func (c *committer) write(ws ...*fileWrite) {
	tmps := make([]*os.File, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		tmps[i], w.err = create(w.path, w.data)
		if w.err == nil && i < len(ws)-1 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.err = tmps[i].Sync()
			}()
		} else if w.err == nil {
			w.err = tmps[i].Sync()
		}
	}
	wg.Wait()
	var dirs []string
	for i, w := range ws {
		if tmps[i] == nil {
			continue
		}
		if cerr := tmps[i].Close(); w.err == nil {
			w.err = cerr
		}
		if w.err == nil {
			w.err = os.Rename(tmps[i].Name(), w.path)
		}
		if w.err != nil {
			os.Remove(tmps[i].Name())
			w.err = &os.PathError{Op: "write", Path: w.path, Err: unwrapPath(w.err)}
			continue
		}
		dirs = append(dirs, filepath.Dir(w.path))
	}
	if len(dirs) == 0 {
		return
	}
	// A directory's sync that fails fails every write renamed in it: its
	// rename may not survive a crash.
	errs := c.syncDirs(dirs)
	for _, w := range ws {
		if err := errs[filepath.Dir(w.path)]; err != nil && w.err == nil {
			w.err = err
		}
	}
}

// syncDirs syncs dirs in a group with the other writers waiting, and
// returns the errors of those that failed.
func (c *committer) syncDirs(dirs []string) map[string]error {
	me := &dirWait{dirs: dirs, wake: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, me)
	if c.leading {
		c.mu.Unlock()
		<-me.wake
		if !me.lead {
			return me.errs
		}
		c.mu.Lock()
	}
	c.leading = true
	group := c.queue
	c.queue = nil
	c.mu.Unlock()

	synced := map[string]error{}
	for _, w := range group {
		w.errs = map[string]error{}
		for _, d := range w.dirs {
			err, done := synced[d]
			if !done {
				err = syncDir(d)
				synced[d] = err
			}
			if err != nil {
				w.errs[d] = err
			}
		}
	}

	c.mu.Lock()
	for _, w := range group {
		if w != me {
			close(w.wake)
		}
	}
	if len(c.queue) > 0 {
		next := c.queue[0]
		next.lead = true
		close(next.wake)
	} else {
		c.leading = false
	}
	c.mu.Unlock()
	return me.errs
}

// replace writes data over path through a temporary file renamed over
// it, as write does, but syncs neither: for what only a runner started
// again on the same boot reads (the file system keeps it across the
// runner's death), and no crash of the machine leaves worth having.
func replace(path string, data []byte) error {
	tmp, err := create(path, data)
	if tmp != nil {
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err != nil {
			os.Remove(tmp.Name())
		}
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: path, Err: unwrapPath(err)}
	}
	return nil
}

// create writes data to a new temporary file beside path, named as
// atomicfile names its own (a crash leaves it for removeTemporary). The
// file is returned even with an error, for the caller to remove.
func create(path string, data []byte) (*os.File, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, &os.PathError{Op: "write", Path: path, Err: unwrapPath(err)}
	}
	if _, err := tmp.Write(data); err != nil {
		return tmp, err
	}
	// CreateTemp makes it 0600 less the umask: a chmod, which the file
	// system journals, only when the umask took some of that away.
	if fi, err := tmp.Stat(); err != nil || fi.Mode().Perm() != 0o600 {
		return tmp, tmp.Chmod(0o600)
	}
	return tmp, nil
}

// syncDir makes the renames in a directory durable. It is a variable so
// that a test can fail it, which a real disk does not do on demand.
var syncDir = atomicfile.SyncDir

// unwrapPath is the cause of a *os.PathError or *os.LinkError, which a
// write's own error then names with the file's path.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
