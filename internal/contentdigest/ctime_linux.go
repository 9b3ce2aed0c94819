package contentdigest

import "syscall"

// ctime is the status change time of st in nanoseconds.
func ctime(st *syscall.Stat_t) int64 { return st.Ctim.Sec*1e9 + st.Ctim.Nsec }
