package runtimetest

import (
	"os"
	"strconv"
	"strings"
)

// HostPID turns the pid of a child of this process, as this process sees
// it, into its pid on the machine: a test plugin that runs in a PID
// namespace of its own sees small pids, but /proc is the machine's, where
// its children have their real ones (the last pid of their NSpid line is
// the one the plugin sees). A pid it cannot place is returned as is.
func HostPID(pid int) int {
	self, err := os.Readlink("/proc/self")
	if err != nil {
		return pid
	}
	want := strconv.Itoa(pid)
	tasks, _ := os.ReadDir("/proc/" + self + "/task")
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + self + "/task/" + task.Name() + "/children")
		for _, child := range strings.Fields(string(b)) {
			status, _ := os.ReadFile("/proc/" + child + "/status")
			for _, line := range strings.Split(string(status), "\n") {
				if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
					if ns := strings.Fields(rest); len(ns) > 0 && ns[len(ns)-1] == want {
						n, _ := strconv.Atoi(child)
						return n
					}
				}
			}
		}
	}
	return pid
}
