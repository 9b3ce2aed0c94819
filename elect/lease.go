package elect

import (
	"encoding/json"
	"fmt"
	"io"
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
	_, err = tmp.Write(append(data, '\n'))
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
