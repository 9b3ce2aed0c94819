//go:build unix

package contentdigest

import (
	"fmt"
	"io/fs"
	"syscall"
)

// statKey identifies a file's content as stat sees it: device, inode,
// size, and the modification and change times in nanoseconds. A file
// rewritten in place changes its mtime and ctime; one replaced by a rename
// has another inode; touching the mtime back does not reset the ctime.
func statKey(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Sprintf("s%d-m%d", fi.Size(), fi.ModTime().UnixNano())
	}
	return fmt.Sprintf("d%d-i%d-s%d-m%d-c%d", uint64(st.Dev), uint64(st.Ino), st.Size,
		fi.ModTime().UnixNano(), ctime(st))
}
