package output

import (
	"fmt"
	"time"
)

// A Log stops writing its file while the file system holding it has less
// free than its reserve, and says so in the file, in one line; it writes
// again once twice the reserve is free, and says how much it left out.
// graft keeps its state (the applied spec, generations, records) on the
// same file system, usually: a plugin whose output fills the disk must not
// keep graft from recording what it runs. Meanwhile the lines still reach
// Tail and the followers, and Write never waits, so the plugin's output is
// drained as ever and the plugin never blocks on it.
const (
	maxReserve = 16 << 20
	// maxUnchecked bounds what is written between two looks.
	maxUnchecked = 1 << 20
)

// checkEvery is how often free space is looked at, at least, while the Log
// writes, and while it is paused; a variable for tests.
var checkEvery = time.Second

// space is a Log's account of its file system's free space. Log.mu guards
// it.
type space struct {
	reserve   int64     // from Options; 0: from the file system's size
	unchecked int64     // what may be written between two looks
	written   int64     // bytes written since the last look
	looked    time.Time // when free space was last looked at; zero: never
	paused    bool
	skipped   int64 // bytes left out since the pause
}

// statFS returns the bytes free to unprivileged users on the file system
// of the open file f, and its size; ok is false where the system cannot
// tell. It is a variable so that this package's tests can make a disk look
// full; a real full disk, a small tmpfs, is tested in host.
var statFS = fsSpace

// room reports whether n bytes may go to the file now, looking at the free
// space when it is due, and writes the notices of a pause and of its end.
// l.mu is held and l.f is open.
func (l *Log) room(n int) bool {
	s := &l.space
	now := time.Now()
	due := s.looked.IsZero() || now.Sub(s.looked) >= checkEvery ||
		!s.paused && s.written+int64(n) > s.unchecked
	if due {
		s.looked, s.written = now, 0
		if free, size, ok := statFS(l.f); ok {
			reserve := s.reserve
			if reserve <= 0 {
				reserve = min(size/100, maxReserve)
			}
			s.unchecked = min(max(reserve/4, 4096), maxUnchecked)
			switch {
			case !s.paused && free < reserve+int64(n):
				s.paused = true
				l.notice(fmt.Sprintf("[graft: less than %s free on this disk: output is not written to this file until there is room again]", human(reserve)))
			case s.paused && free >= 2*reserve:
				s.paused = false
				l.notice(fmt.Sprintf("[graft: room again on this disk: %d bytes of output were not written to this file]", s.skipped))
				s.skipped = 0
			}
		}
	}
	if s.paused {
		s.skipped += int64(n)
	}
	return !s.paused
}

// notice writes line to the file, on a line of its own, whatever the free
// space: it is short, and written once a pause.
func (l *Log) notice(line string) {
	b := []byte(line + "\n")
	if l.midLine || l.earlier {
		b = append([]byte{'\n'}, b...)
	}
	_ = l.put(b)
}

// human writes a size in bytes for people: "16 MiB", "20 KiB".
func human(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.3g MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.3g KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
