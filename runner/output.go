package runner

import (
	"github.com/graftland/graft/internal/output"
	"github.com/graftland/graft/runtime"
)

// The output of a process: lines go to its session's event stream as
// they come, and the last ones are kept for its exit.
const (
	tailLines = 20       // kept for the exit's tail
	maxLine   = 64 << 10 // a longer line is cut into lines of this size
)

var _ runtime.Output = (*output.Lines)(nil)

// newLineOutput returns the runtime.Output of one process, which hands
// each line to send, in order. It never blocks the process: a line no
// stream takes is dropped (see stream.push). A line that reaches maxLine
// bytes at the end of a write is sent then, not when more of it comes.
func newLineOutput(send func(line string)) *output.Lines {
	return output.NewLines(output.LineOptions{Keep: tailLines, Max: maxLine, Line: send, EndFull: true})
}
