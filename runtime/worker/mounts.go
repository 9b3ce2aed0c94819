package worker

import (
	"io/fs"
	"slices"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"github.com/graftland/graft/runtime"
)

// mounts shows the module its mounts, read-only unless writable; it sees
// no other host file. A writable mount refuses to create symbolic links:
// the host resolves them, so a relative link from inside a mount
// ("../../etc/shadow") would show the module any file of the host. On
// every mount only regular files and directories open (regularOnly).
func mounts(req runtime.Request) wazero.FSConfig {
	cfg := wazero.NewFSConfig()
	for _, m := range slices.Clone(req.Plugin.Mounts) {
		dir := regularOnly{sysfs.DirFS(req.Path(m.Host))}
		if m.Writable {
			cfg = cfg.(sysfs.FSConfig).WithSysFSMount(noSymlinks{dir}, m.Guest)
		} else {
			cfg = cfg.(sysfs.FSConfig).WithSysFSMount(&sysfs.ReadFS{FS: dir}, m.Guest)
		}
	}
	return cfg
}

// regularOnly is a file system on which only regular files and
// directories open: a named pipe, a device or a socket is refused
// (ENOTSUP). Each open is non-blocking, then checked with fstat, so that
// no open waits for a pipe's writer, and the check is of what was
// opened. A module therefore never blocks in a host call that closing it
// cannot end, and its stop is always confirmed (docs/stopping.md).
type regularOnly struct{ experimentalsys.FS }

// OpenFile opens path as regularOnly says.
func (r regularOnly) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	f, errno := r.FS.OpenFile(path, flag|experimentalsys.O_NONBLOCK, perm)
	if errno != 0 {
		return nil, errno
	}
	st, errno := f.Stat()
	if errno == 0 && st.Mode.Type() != 0 && st.Mode.Type() != fs.ModeDir {
		errno = experimentalsys.ENOTSUP
	}
	if pf, ok := f.(experimentalsys.PollableFile); ok && errno == 0 && flag&experimentalsys.O_NONBLOCK == 0 {
		errno = pf.SetNonblock(false) // blocking, as asked: for a regular file or a directory, no wait
	}
	if errno != 0 {
		f.Close()
		return nil, errno
	}
	return f, 0
}

// noSymlinks is a file system on which no symbolic link can be made.
type noSymlinks struct{ experimentalsys.FS }

// Symlink refuses: see mounts.
func (noSymlinks) Symlink(string, string) experimentalsys.Errno { return experimentalsys.EPERM }
