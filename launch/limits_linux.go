package launch

import (
	"maps"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// resources are the RLIMIT_ numbers of LimitNames.
var resources = map[string]int{
	"as": unix.RLIMIT_AS, "core": unix.RLIMIT_CORE, "cpu": unix.RLIMIT_CPU, "data": unix.RLIMIT_DATA,
	"fsize": unix.RLIMIT_FSIZE, "locks": unix.RLIMIT_LOCKS, "memlock": unix.RLIMIT_MEMLOCK,
	"msgqueue": unix.RLIMIT_MSGQUEUE, "nice": unix.RLIMIT_NICE, "nofile": unix.RLIMIT_NOFILE,
	"nproc": unix.RLIMIT_NPROC, "rss": unix.RLIMIT_RSS, "rtprio": unix.RLIMIT_RTPRIO,
	"rttime": unix.RLIMIT_RTTIME, "sigpending": unix.RLIMIT_SIGPENDING, "stack": unix.RLIMIT_STACK,
}

// Resource is the RLIMIT_ number of a limit's name, if it has one here.
func Resource(name string) (int, bool) {
	r, ok := resources[name]
	return r, ok
}

// Ungrantable lists the limits of ls (known names only) that this process
// cannot give a child: a hard value above its own hard one, when it lacks
// CAP_SYS_RESOURCE, which alone raises a hard limit (a process that is
// not root lacks it, and so may root in a container).
func Ungrantable(ls map[string]Limit) Problems {
	if len(ls) == 0 || CanRaiseLimits() {
		return nil
	}
	var c checker
	for _, name := range slices.Sorted(maps.Keys(ls)) {
		r, ok := resources[name]
		if !ok {
			continue
		}
		var own unix.Rlimit
		if err := unix.Getrlimit(r, &own); err != nil {
			c.add("limits."+name, "cannot read this process's own limit: %v", err)
			continue
		}
		if want := ls[name].Hard; uint64(want) > own.Max {
			c.add("limits."+name, "hard %s is above this process's own hard limit %s, which it cannot raise: %s",
				want, LimitValue(own.Max), withoutCap())
		}
	}
	return c.out
}

// CanRaiseLimits reports whether this process has CAP_SYS_RESOURCE, and
// can give a child a hard limit above its own.
func CanRaiseLimits() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[unix.CAP_SYS_RESOURCE/32].Effective&(1<<(unix.CAP_SYS_RESOURCE%32)) != 0
}

func withoutCap() string {
	if os.Geteuid() != 0 {
		return "it is not root"
	}
	return "it is root without CAP_SYS_RESOURCE (as in many containers)"
}
