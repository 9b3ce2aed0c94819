package proc

import (
	"bytes"
	"errors"
	"os"
)

// StartTime returns when process pid started, in clock ticks since boot
// (field 22 of /proc/PID/stat). With the pid and the boot id it names one
// process for good: a pid handed out again goes with another start time.
func StartTime(pid int) (uint64, error) {
	if pid <= 0 {
		return 0, errors.New("start time: no such process")
	}
	e, err := stat(pid)
	if err != nil {
		return 0, err
	}
	return e.start, nil
}

// BootID returns the kernel's id of this boot of the machine
// (/proc/sys/kernel/random/boot_id): start times count from it.
func BootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	id := string(bytes.TrimSpace(b))
	if id == "" {
		return "", errors.New("empty boot id")
	}
	return id, nil
}

// Lookup returns the live process pid as a Member, if it is the process
// that started at start (clock ticks since boot) and not another that
// reused its pid; a zombie is not live. Signals and waits through the
// Member reach that process or nothing.
func Lookup(pid int, start uint64) (Member, bool) {
	if pid <= 0 {
		return Member{}, false
	}
	e, err := stat(pid)
	if err != nil || e.zombie || e.start != start {
		return Member{}, false
	}
	return Member{Pid: pid, Pgid: e.pgid, start: start}, true
}
