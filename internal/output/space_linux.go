package output

import (
	"os"

	"golang.org/x/sys/unix"
)

func fsSpace(f *os.File) (free, size int64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return 0, 0, false
	}
	bs := int64(st.Frsize)
	if bs <= 0 {
		bs = int64(st.Bsize)
	}
	return int64(st.Bavail) * bs, int64(st.Blocks) * bs, true
}
