//go:build unix

package hostapi

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// gone reports whether process pid has ended: it does not exist, or is a
// zombie whose parent has yet to reap it and whose threads are all gone
// (a leader turns zombie before the rest of its threads, which still
// hold its files: the state dir's lock).
func gone(pid int) bool {
	if syscall.Kill(pid, 0) == syscall.ESRCH {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false // no /proc (not Linux): it exists
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) == 0 || fields[0] != "Z" {
		return false
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return len(tasks) <= 1
}
