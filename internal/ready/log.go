package ready

import (
	"bytes"
	"io"
	"regexp"
	"sync"

	"github.com/graftland/graft/launch"
)

// Output is where a plugin's output goes: runtime.Output, which this
// package cannot name (placement imports it).
type Output interface {
	io.Writer
	Tail() []string
}

// maxLine bounds the part of a line kept to match: a longer line is
// matched on its first maxLine bytes.
const maxLine = 64 << 10

// Watch returns the output to give a plugin whose ready check has a log
// pattern: out, through a watch that closes seen at the first line that
// matches. Without a pattern it returns out and a nil seen. The pattern
// was checked when the spec was loaded; one that does not compile is
// never seen.
func Watch(r *launch.Ready, out Output) (Output, <-chan struct{}) {
	if r == nil || r.Log == "" {
		return out, nil
	}
	w := &logWatch{Output: out, seen: make(chan struct{})}
	w.re, _ = regexp.Compile(r.Log)
	return w, w.seen
}

// logWatch passes output on and matches it line by line, until a line
// matches.
type logWatch struct {
	Output
	re      *regexp.Regexp
	mu      sync.Mutex
	partial []byte
	seen    chan struct{}
	matched bool
}

// Write passes p on, then matches it: the line that makes the plugin
// ready is in its output before its check passes.
func (w *logWatch) Write(p []byte) (int, error) {
	n, err := w.Output.Write(p)
	w.match(p)
	return n, err
}

// match looks for a matching line in p, the next part of the output.
func (w *logWatch) match(p []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.matched || w.re == nil {
		return
	}
	for len(p) > 0 {
		line, rest, complete := bytes.Cut(p, []byte("\n"))
		if room := maxLine - len(w.partial); room > 0 {
			w.partial = append(w.partial, line[:min(len(line), room)]...)
		}
		if !complete {
			return
		}
		if w.re.Match(bytes.TrimSuffix(w.partial, []byte("\r"))) {
			w.matched, w.partial = true, nil
			close(w.seen)
			return
		}
		w.partial, p = w.partial[:0], rest
	}
}
