package main

import (
	"io"
	"os"
)

// colorful reports whether output to w gets ANSI colours: --color always,
// or --color auto on a terminal when NO_COLOR (https://no-color.org) is
// unset or empty.
func (g *Globals) colorful(w io.Writer) bool {
	switch g.Color {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	return terminal(w)
}

// terminal reports whether w is a terminal that can redraw a line (TERM is
// not dumb): where live views go, whatever --color says.
func terminal(w io.Writer) bool {
	if os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
