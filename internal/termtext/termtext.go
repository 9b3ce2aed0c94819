// Package termtext makes text that comes from elsewhere (a plugin's
// output, a name or a holder from a host over TCP, an error) safe to print
// on a terminal: what a terminal would act on instead of showing is
// escaped, as a Go string literal writes it.
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Line returns s for one line of output: every control character (C0,
// newlines and tabs included, DEL and C1), every bidirectional formatting
// character, the line and paragraph separators, and every byte that is
// not UTF-8 are written as escapes (\x1b, \r, \u202e, \x9b). The rest,
// backslashes included, is left as it is.
func Line(s string) string { return escape(s, false) }

// Text is Line for text of several lines: newlines stay, and so does
// each line's indentation.
func Text(s string) string { return escape(s, true) }

// Cut returns s cut to at most n runes, the last one an ellipsis when it
// was longer.
func Cut(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return s[:i] + "…"
}

// Cell is a table cell: s on one line, cut to n runes.
func Cell(s string, n int) string { return Cut(Line(s), n) }

func escape(s string, multiline bool) string {
	if safe(s, multiline) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && multiline, r == '\t' && multiline:
			b.WriteRune(r)
		case unsafe(r):
			b.WriteString(quoted(r))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func safe(s string, multiline bool) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafe(r) && !(multiline && (r == '\n' || r == '\t')) {
			return false
		}
		i += size
	}
	return true
}

// unsafe reports whether a terminal may act on r instead of showing it.
func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f: // C0, DEL, C1
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}

// quoted is r as a Go literal writes it.
func quoted(r rune) string {
	switch r {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\v':
		return `\v`
	}
	if r < 0x80 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// JSON returns JSON text with the characters Line escapes, which
// encoding/json leaves as they are inside strings (DEL, C1, bidi
// controls), written as \u escapes instead: the same JSON, safe on a
// terminal. Outside strings JSON text is ASCII, so every such character
// is inside a string, where the escape means the same.
func JSON(b []byte) []byte {
	if safe(string(b), true) {
		return b
	}
	var out []byte
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if (r != utf8.RuneError || size != 1) && r >= 0x20 && unsafe(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+size]...) // encoding/json escapes C0 and replaces bad UTF-8 itself
		}
		i += size
	}
	return out
}
