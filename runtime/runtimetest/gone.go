package runtimetest

import (
	"os"
	"strconv"
	"strings"
)

// Gone reports whether pid names no live process: none, or a zombie
// about to be reaped.
func Gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) == 0 || fields[0] == "Z"
}
