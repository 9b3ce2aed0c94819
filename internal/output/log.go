// Package output owns a plugin's output: a size-capped, rotated log file, live followers, and the last lines kept for error messages.
package output

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/graftland/graft/internal/safefs"
)

// maxLine is the longest line handed to Tail, Last and followers. Longer
// lines are cut into pieces of this size, counted from the line's start, so
// output without newlines cannot grow memory.
const maxLine = 64 << 10

// Options bound a Log. A field left at zero (or below) takes its default.
type Options struct {
	MaxSize   int64 // rotate when the file would grow past this; default 10 MiB
	Keep      int   // rotated files kept (path.1 … path.Keep); default 3
	TailLines int   // lines kept in memory for Tail; default 20
	// Reserve is the free space the file system holding the log keeps for
	// graft's state: below it the log stops writing its file (see
	// space.go). Default: 1% of the file system, at most 16 MiB.
	Reserve int64
	// Opened, when set, is called with the file each time the Log opens
	// it: at Open and after each rotation. A host's own log uses it to
	// point its standard output and error at the current file.
	Opened func(f *os.File)
}

func (o Options) withDefaults() Options {
	if o.MaxSize <= 0 {
		o.MaxSize = 10 << 20
	}
	if o.Keep <= 0 {
		o.Keep = 3
	}
	if o.TailLines <= 0 {
		o.TailLines = 20
	}
	return o
}

// Log is one plugin's merged stdout and stderr. A local process writes into
// it from the goroutine copying its pipe, a WebAssembly worker directly.
// All methods are safe for concurrent use; none starts a goroutine.
//
// Its files are opened as safefs.OpenFile does: a symbolic link, a named
// pipe, a device or a file of another user where a log should be is
// refused, never written or read.
type Log struct {
	path string
	opt  Options

	mu     sync.Mutex
	f      *os.File // nil after Close or a failed rotation; the next Write reopens it
	size   int64
	closed bool
	// earlier is set when the file ends in a line an earlier writer left
	// unfinished (a plugin killed mid-line): the next write to the file
	// ends it first, so that this run's first line does not join it.
	earlier bool
	// midLine is set when the last byte written to the file is not '\n'.
	midLine   bool
	space     space
	lines     *Lines // for Tail; hands each line to the followers
	followers map[*Follower]struct{}
}

// Open opens the log at path for appending, creating its directory (0o750)
// and the file (0o640); a directory that safefs.Root refuses is an error.
// An existing file is appended to and its size counts towards MaxSize.
// Open writes nothing: a host that starts on a full disk still starts.
func Open(path string, opt Options) (*Log, error) {
	opt = opt.withDefaults()
	if err := safefs.Root(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	l := &Log{
		path:      path,
		opt:       opt,
		followers: make(map[*Follower]struct{}),
		space:     space{reserve: opt.Reserve},
	}
	// Without EndFull, Lines cut lines as lastStart counts them in the
	// files: a line of exactly maxLine bytes stays one line.
	l.lines = NewLines(LineOptions{Keep: opt.TailLines, Max: maxLine, Line: l.toFollowers})
	if err := l.open(); err != nil {
		return nil, err
	}
	if l.size > 0 {
		last, err := lastByte(l.path, l.size)
		if err != nil {
			_ = l.f.Close()
			return nil, err
		}
		l.earlier = last != '\n'
	}
	return l, nil
}

// open opens path for appending and counts what it already holds.
func (l *Log) open() error {
	f, err := safefs.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	l.f, l.size = f, fi.Size()
	if l.opt.Opened != nil {
		l.opt.Opened(f)
	}
	return nil
}

// lastByte reads the last byte of the first size bytes of the file at
// path.
func lastByte(path string, size int64) (byte, error) {
	r, err := safefs.Open(path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	var b [1]byte
	if _, err := r.ReadAt(b[:], size-1); err != nil {
		return 0, err
	}
	return b[0], nil
}

// Write appends p to the file and hands its lines to Tail and the followers;
// it never waits for a follower. p is always consumed whole: when the file
// cannot take it (disk full, rotation failed), Tail and the followers still
// get its lines and Write returns len(p) with the error, so the caller can
// report it and keep writing. While the disk is nearly full (see space.go)
// the file is not written, without an error. After Close it returns
// os.ErrClosed.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, os.ErrClosed
	}
	var err error
	if len(p) > 0 {
		err = l.writeFile(p)
	}
	_, _ = l.lines.Write(p)
	return len(p), err
}

func (l *Log) writeFile(p []byte) error {
	if l.f == nil {
		if err := l.open(); err != nil {
			return err
		}
	}
	if !l.room(len(p)) {
		return nil
	}
	if l.earlier {
		p = append([]byte{'\n'}, p...)
	}
	// A write is never split across files, so one larger than MaxSize goes
	// whole into a fresh file.
	if l.size > 0 && l.size+int64(len(p)) > l.opt.MaxSize {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	return l.put(p)
}

// Continue says that the file's writer goes on where it left off: a
// process an earlier host started and this one adopted (docs/upgrade.md),
// whose last line that host may have written in part. That line is not
// ended first, as a line an earlier writer left is.
func (l *Log) Continue() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.earlier = false
}

// put writes b at the end of the file, and keeps count.
func (l *Log) put(b []byte) error {
	n, err := l.f.Write(b)
	l.size += int64(n)
	l.space.written += int64(n)
	if n > 0 {
		l.earlier = false
		l.midLine = b[n-1] != '\n'
	}
	return err
}

// rotate shifts path.i to path.i+1, dropping path.Keep, moves path to path.1
// and starts an empty path. On failure l.f is left nil, so the next Write
// reopens whatever path then holds and tries again when it is full.
func (l *Log) rotate() error {
	// Close before renaming: Windows cannot rename an open file.
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return err
	}
	for i := l.opt.Keep - 1; i >= 1; i-- {
		err := os.Rename(l.rotated(i), l.rotated(i+1))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(l.path, l.rotated(1)); err != nil {
		return err
	}
	return l.open()
}

func (l *Log) rotated(i int) string { return rotated(l.path, i) }

// rotated is the path of the log at path's i-th rotated file.
func rotated(path string, i int) string { return path + "." + strconv.Itoa(i) }

// toFollowers hands a line to each follower. Lines calls it from Write
// and Close, which hold l.mu.
func (l *Log) toFollowers(line string) {
	for f := range l.followers {
		f.send(line)
	}
}

// Close hands an unfinished last line to Tail and the followers as a line,
// ends every follower (its channel closes once drained) and closes the file.
// It does not fsync: the page cache outlives the plugin and graft, and only
// a machine crash would lose the tail. Later Writes return os.ErrClosed;
// Last and Follow still read the files. Close is idempotent.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	l.lines.End()
	for f := range l.followers {
		l.end(f)
	}
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
