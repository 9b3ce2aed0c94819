package elect

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Lease is the content of <instance>.lease.json.
type Lease struct {
	// Holder is the leader's HostID.
	Holder string `json:"holder"`
	// Address is where the leader's plugin serves (host:port).
	Address string `json:"address"`
	// Epoch grows by one at every election; the host uses it as the
	// plugin's generation.
	Epoch int64 `json:"epoch"`
	// RenewCount grows at every renewal, so the file changes even where
	// mtimes are coarse (docs/semantics.md, "Floating plugins: the
	// election").
	RenewCount int64 `json:"renewCount"`
	// Released is set by a leader that stepped down on purpose.
	Released bool `json:"released"`
}

// supersedes reports whether l, read from the file, ends the term that
// wrote mine: a higher epoch, or this epoch taken by another holder (two
// contenders that both passed the lock, one of them after removing it as
// stale, write the same epoch; the later write wins).
func (l Lease) supersedes(mine Lease) bool {
	return l.Epoch > mine.Epoch || l.Epoch == mine.Epoch && l.Holder != mine.Holder
}

// FileMode is the mode of the lease and lock files: readable by everyone
// who can read the directory. Hosts that share it may run as different
// users (a network share often maps each machine to its own uid, and its
// gids need not agree either, so following the directory's group would
// not do), and each must read the others' lease: one it cannot read would
// leave it blind to a leader. The files hold no secret (a host id, an
// address, counters). It is set with a chmod after the file is made, not
// left to the umask (docs/semantics.md, "Floating plugins: the election").
const FileMode fs.FileMode = 0o644

// UnreadableError is a lease file that exists but that this host may not
// read (EACCES, EPERM): another host's, written by another user with a mode
// that shuts this one out. It never counts as no lease: another host may
// lead through it, so this host does not contend while it lasts, and reads
// it again every poll.
type UnreadableError struct {
	// Path is the lease file.
	Path string
	// Err is the cause, as the open returned it.
	Err error
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("lease %s: %v: it exists, but this host may not read it, and does not contend while another host may lead through it", e.Path, errors.Unwrap(e.Err))
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// Hint tells the operator what to do about it.
func (e *UnreadableError) Hint() string {
	return fmt.Sprintf("every host needs write access to %s and read access to the others' files there: make the file readable (chmod %o %s), or run the hosts as one user", filepath.Dir(e.Path), FileMode, e.Path)
}

// unreadable reports whether err is an UnreadableError.
func unreadable(err error) bool {
	var u *UnreadableError
	return errors.As(err, &u)
}

// maxLeaseSize bounds a read, so a stray large file does not exhaust memory.
const maxLeaseSize = 64 << 10

// fileState is one read of the lease file.
type fileState struct {
	lease Lease
	mtime time.Time
}

func (s fileState) same(o fileState) bool { return s.lease == o.lease && s.mtime.Equal(o.mtime) }

// readLease reads the lease and its mtime through one handle, so both
// describe the same file even if a renewal replaces it meanwhile.
func readLease(path string) (fileState, error) {
	f, err := openShared(path)
	if errors.Is(err, fs.ErrPermission) {
		return fileState{}, &UnreadableError{Path: path, Err: err}
	}
	if err != nil {
		return fileState{}, fmt.Errorf("read lease: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fileState{}, fmt.Errorf("read lease: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxLeaseSize))
	if err != nil {
		return fileState{}, fmt.Errorf("read lease: %w", err)
	}
	var l Lease
	if err := json.Unmarshal(data, &l); err != nil {
		return fileState{}, fmt.Errorf("parse lease %s: %w", path, err)
	}
	return fileState{lease: l, mtime: fi.ModTime()}, nil
}

// readBy reads the lease, giving up at deadline.
func (e *Election) readBy(deadline time.Time) (fileState, error) {
	return doValue(e, "read lease", deadline, func(func() bool) (fileState, error) { return readLease(e.leasePath) })
}

// writeLease replaces the lease atomically, giving up at deadline: a temp
// file in the same directory, fsync, rename, then fsync the directory.
// Readers see the old lease or the new one, never a part. A write given up
// on before its rename is not renamed.
func (e *Election) writeLease(l Lease, deadline time.Time) error {
	data, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("write lease: %w", err)
	}
	err = e.do("write lease", deadline, func(abandoned func() bool) error { return e.replaceLease(data, abandoned) })
	if err != nil {
		return err
	}
	e.noteEpoch(l.Epoch)
	return nil
}

// replaceLease writes data to a temp file and renames it over the lease,
// unless abandoned by then.
func (e *Election) replaceLease(data []byte, abandoned func() bool) error {
	tmp, err := os.CreateTemp(e.cfg.Dir, e.cfg.Instance+".lease.*.tmp")
	if err != nil {
		return fmt.Errorf("write lease: %w", err)
	}
	name := tmp.Name()
	// CreateTemp makes the file 0600: the other hosts could not read it.
	err = tmp.Chmod(FileMode)
	if err == nil {
		_, err = tmp.Write(append(data, '\n'))
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && abandoned() {
		err = ErrHung
	}
	if err == nil {
		err = e.rename(name, e.leasePath)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("write lease: %w", err)
	}
	// The rename is what others read; a share that refuses to fsync a
	// directory does not make it fail.
	_ = syncDir(e.cfg.Dir)
	return nil
}

// ReadTimeout bounds Read: a tool that asks who leads does not hang with
// the share.
const ReadTimeout = DefaultRenew

// Read reads the lease of instance in dir once, with the file's mtime (on
// the share's clock): for tools that show who leads without taking part.
// It gives up after ReadTimeout with ErrHung.
func Read(dir, instance string) (Lease, time.Time, error) {
	type read struct {
		st  fileState
		err error
	}
	ch := make(chan read, 1) // the read may outlive Read on a hung share
	go func() {
		st, err := readLease(filepath.Join(dir, instance+".lease.json"))
		ch <- read{st, err}
	}()
	t := time.NewTimer(ReadTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.st.lease, r.st.mtime, r.err
	case <-t.C:
		return Lease{}, time.Time{}, fmt.Errorf("read lease: %w (within %s)", ErrHung, ReadTimeout)
	}
}
