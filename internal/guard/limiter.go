package guard

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// limiter logs refusals at most once every so often, with the count of
// those it left out since the last line: a flood of bad requests cannot
// flood the log.
type limiter struct {
	every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether a line may be logged now, and how many were left
// out since the last.
func (l *limiter) allow() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return true, n
}

// note logs a refused request, at warn, if the rate allows: its address,
// method and path (clipped and escaped), never its headers.
func (l *limiter) note(log *slog.Logger, msg string, r *http.Request) {
	ok, suppressed := l.allow()
	if !ok {
		return
	}
	log.Warn(msg, "remote", r.RemoteAddr, "method", clip(r.Method, 16), "path", clip(r.URL.EscapedPath(), 64),
		"suppressed", suppressed)
}

// clip returns s cut to n bytes (marked with "..." when cut), with every
// byte that is not printable ASCII written \xNN.
func clip(s string, n int) string {
	cut := len(s) > n
	if cut {
		s = s[:n]
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '\\' {
			b.WriteString(`\x`)
			b.WriteByte("0123456789abcdef"[c>>4])
			b.WriteByte("0123456789abcdef"[c&15])
			continue
		}
		b.WriteByte(c)
	}
	if cut {
		b.WriteString("...")
	}
	return b.String()
}
