package worker

import (
	"slices"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"github.com/graftland/graft/runtime"
)

// mounts shows the module its mounts, read-only unless writable; it sees
// no other host file. A writable mount refuses to create symbolic links:
// the host resolves them, so a relative link from inside a mount
// ("../../etc/shadow") would show the module any file of the host.
func mounts(req runtime.Request) wazero.FSConfig {
	fs := wazero.NewFSConfig()
	for _, m := range slices.Clone(req.Plugin.Mounts) {
		host := req.Path(m.Host)
		if m.Writable {
			fs = fs.(sysfs.FSConfig).WithSysFSMount(noSymlinks{sysfs.DirFS(host)}, m.Guest)
		} else {
			fs = fs.WithReadOnlyDirMount(host, m.Guest)
		}
	}
	return fs
}

// noSymlinks is a file system on which no symbolic link can be made.
type noSymlinks struct{ experimentalsys.FS }

// Symlink refuses: see mounts.
func (noSymlinks) Symlink(string, string) experimentalsys.Errno { return experimentalsys.EPERM }
