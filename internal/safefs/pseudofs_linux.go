package safefs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// PseudoFS refuses a file of a pseudo file system, whose "files" are the
// kernel's state: a read of one may block or never end (/proc/kmsg), and
// its content is no file's.
func PseudoFS(f *os.File, path string) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return err
	}
	switch st.Type {
	case unix.PROC_SUPER_MAGIC, unix.SYSFS_MAGIC, unix.DEBUGFS_MAGIC, unix.TRACEFS_MAGIC, unix.SECURITYFS_MAGIC, unix.CGROUP2_SUPER_MAGIC, unix.CGROUP_SUPER_MAGIC:
		return fmt.Errorf("%s: a file of the kernel's (/proc, /sys), not one whose content a plugin depends on", path)
	}
	return nil
}
