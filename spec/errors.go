package spec

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/graftland/graft/internal/errkind"
	"github.com/graftland/graft/internal/termtext"
)

// Pos is a position in the plugins file, 1-based.
type Pos struct {
	Line, Col int
}

// Error is one problem in a plugins file, at a position and a field path
// such as plugins.api.uses[0].
type Error struct {
	File string
	Pos  Pos
	Path string
	Msg  string
}

func (e *Error) Error() string {
	// One problem is one line, whatever it quotes (a path with a newline
	// in it, an escape sequence): termtext.Line escapes what a terminal
	// would act on.
	var b strings.Builder
	b.WriteString(termtext.Line(e.File))
	if e.Pos.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Pos.Line)
		if e.Pos.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Pos.Col)
		}
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(termtext.Line(e.Path))
		b.WriteString(": ")
	}
	b.WriteString(termtext.Line(e.Msg))
	return b.String()
}

// Errors is every problem found in a plugins file, sorted by position.
// Load returns it whole, so an operator fixes a file in one pass.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As and errors.Is look at each problem.
func (es Errors) Unwrap() []error {
	errs := make([]error, len(es))
	for i, e := range es {
		errs[i] = e
	}
	return errs
}

// sort orders the problems by position, then path and message, and drops
// exact duplicates.
func (es Errors) sort() Errors {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	return slices.CompactFunc(es, func(a, b *Error) bool { return *a == *b })
}

// A bad spec crosses the host's API as kind "spec", by its message
// (internal/errkind).
var _ = errkind.Type("spec", http.StatusBadRequest, Errors(nil), false)
