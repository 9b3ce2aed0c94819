package runner

import (
	"bytes"
	"sync"

	"github.com/graftland/graft/placement"
)

// The output of a process: lines go to its session's event stream as
// they come, and the last ones are kept for its exit.
const (
	tailLines = 20       // kept for the exit's tail
	maxLine   = 64 << 10 // a longer line is cut into lines of this size
)

// lineOutput is the placement.Output of one process. It never blocks the
// process: a line no stream takes is dropped (see stream.push).
type lineOutput struct {
	send func(line string)

	mu      sync.Mutex
	partial []byte
	tail    []string
}

var _ placement.Output = (*lineOutput)(nil)

func newLineOutput(send func(line string)) *lineOutput {
	return &lineOutput{send: send}
}

func (o *lineOutput) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			o.partial = append(o.partial, b...)
			for len(o.partial) >= maxLine {
				o.line(string(o.partial[:maxLine]))
				o.partial = append(o.partial[:0], o.partial[maxLine:]...)
			}
			break
		}
		line := string(append(o.partial, b[:i]...))
		o.partial = o.partial[:0]
		b = b[i+1:]
		for len(line) > maxLine {
			o.line(line[:maxLine])
			line = line[maxLine:]
		}
		o.line(line)
	}
	return n, nil
}

// line sends one line and keeps it for the tail. o.mu is held, so lines
// are sent in order.
func (o *lineOutput) line(s string) {
	o.tail = append(o.tail, s)
	if len(o.tail) > 2*tailLines {
		o.tail = append(o.tail[:0], o.tail[len(o.tail)-tailLines:]...)
	}
	o.send(s)
}

// Tail returns the last lines, an unfinished last one included.
func (o *lineOutput) Tail() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	lines := append([]string(nil), o.tail...)
	if len(o.partial) > 0 {
		lines = append(lines, string(o.partial))
	}
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return lines
}
