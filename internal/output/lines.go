package output

import (
	"bytes"
	"sync"
)

// LineOptions configure Lines. A field left at zero (or below) takes its
// default.
type LineOptions struct {
	Keep int // lines kept for Tail; default 20
	// Max is the longest line: a longer one is cut into lines of Max
	// bytes, counted from its start, so output without newlines cannot
	// grow memory. Default 64 KiB.
	Max int
	// Line, when set, is called with each complete line, in order, with
	// the Lines' lock held: a Write returns once its lines are handed on.
	Line func(line string)
	// EndFull ends an unfinished line that has reached Max bytes when
	// the Write that filled it returns, so that it goes to Line at once.
	// Without it, such a line is cut only when another byte of it comes,
	// so that a line of exactly Max bytes stays one line however it was
	// written. With it, a line of exactly Max bytes whose '\n' comes in a
	// later Write is followed by an empty line.
	EndFull bool
}

func (o LineOptions) withDefaults() LineOptions {
	if o.Keep <= 0 {
		o.Keep = 20
	}
	if o.Max <= 0 {
		o.Max = maxLine
	}
	return o
}

// Lines splits what is written to it into lines, cuts lines longer than
// its Max, hands each complete line to its Line func and keeps the last
// Keep of them for Tail. It is safe for concurrent use; Write never fails.
type Lines struct {
	opt LineOptions

	mu      sync.Mutex
	partial []byte // the current line, not yet ended by '\n'; at most Max bytes
	last    ring
}

// NewLines returns empty Lines.
func NewLines(opt LineOptions) *Lines {
	opt = opt.withDefaults()
	return &Lines{opt: opt, last: newRing(opt.Keep)}
}

// Write splits p into lines, carrying an unfinished line over to the next
// Write. It always returns len(p), nil.
func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		for len(chunk) > 0 {
			// Cut only when another byte comes, so that a line of exactly
			// Max bytes stays one line.
			if len(l.partial) == l.opt.Max {
				l.end()
			}
			k := min(len(chunk), l.opt.Max-len(l.partial))
			l.partial = append(l.partial, chunk[:k]...)
			chunk = chunk[k:]
		}
		if i < 0 {
			break
		}
		l.end()
		p = p[i+1:]
	}
	if l.opt.EndFull && len(l.partial) == l.opt.Max {
		l.end()
	}
	return n, nil
}

// End ends an unfinished last line, as a '\n' would; without one it does
// nothing.
func (l *Lines) End() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.end()
	}
}

// end hands the current line on and starts the next. l.mu is held.
func (l *Lines) end() {
	line := string(l.partial)
	l.partial = l.partial[:0]
	l.last.add(line)
	if l.opt.Line != nil {
		l.opt.Line(line)
	}
}

// Unfinished returns the size of the unfinished last line, in bytes.
func (l *Lines) Unfinished() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.partial)
}

// Tail returns the last Keep lines, oldest first; an unfinished last line
// counts. It is nil when nothing was written.
func (l *Lines) Tail() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.last.lines()
	if len(l.partial) > 0 {
		lines = append(lines, string(l.partial))
	}
	if len(lines) > l.opt.Keep {
		lines = lines[len(lines)-l.opt.Keep:]
	}
	return lines
}

// ring keeps the last len(buf) lines handed to it.
type ring struct {
	buf  []string
	next int
	full bool
}

func newRing(n int) ring { return ring{buf: make([]string, n)} }

func (r *ring) add(s string) {
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

func (r *ring) lines() []string {
	var lines []string // nil when empty, as Last returns
	if r.full {
		lines = append(lines, r.buf[r.next:]...)
	}
	return append(lines, r.buf[:r.next]...)
}
