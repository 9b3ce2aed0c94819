package spec

import (
	"bytes"
	"runtime"
	"sync"

	"gopkg.in/yaml.v3"
)

// A large plugins file is parsed in pieces on every core: its plugins
// block is cut before top-level plugin entries, each piece parsed by
// yaml.v3 as a document of its own and its lines shifted back to where
// they are in the file, and the rest of the file is parsed with the block
// blanked out. Anything unusual about the file (no plain plugins: line, a
// piece that does not parse, such as one with an alias to another, an
// explicit "? " key, a tab at the start of a line, a carriage return)
// falls back to parsing the file whole, so a file's tree, and every error
// of a bad file, is what the whole parse gives (split_test.go compares
// the two).

// splitting says when and how finely parseDocument cuts a file: its
// plugins block must be at least min bytes, and is cut in at most pieces
// pieces (0: twice the cores Go runs on). Tests cut small files finely.
var splitting = struct{ min, pieces int }{min: 64 << 10}

// blockLine is a line of a plugins block that starts a top-level plugin
// entry.
type blockLine struct {
	at, line int // its first byte in the file, and its number, 1-based
}

// block is the plugins block of a file: the line "plugins:" at the
// margin, then the indented lines of its mapping.
type block struct {
	keyLine    int         // the line of "plugins:"
	start, end int         // the block's lines, in bytes of the file
	entries    []blockLine // the lines that start a plugin entry
}

// emptyFlowValue reports a key with no value in a flow collection
// ("[api: ]", "{a: }"): yaml.v3 places that value's null by where its
// scanner stands, which depends on what follows the piece, so such a
// file is parsed whole. It finds what the pattern [^:\[]:[ \t]*[\]},]
// would, from colon to colon: a regular expression that must try every
// byte of a large file took a sixth of its load.
func emptyFlowValue(data []byte) bool {
	for i := 1; i < len(data); i++ {
		next := bytes.IndexByte(data[i:], ':')
		if next < 0 {
			return false
		}
		i += next
		if data[i-1] == ':' || data[i-1] == '[' {
			continue
		}
		j := i + 1
		for j < len(data) && (data[j] == ' ' || data[j] == '\t') {
			j++
		}
		if j < len(data) && (data[j] == ']' || data[j] == '}' || data[j] == ',') {
			return true
		}
	}
	return false
}

// parseSplit returns the file's root node parsed in pieces, or false when
// the file must be parsed whole.
func parseSplit(file string, data []byte) (*yaml.Node, bool) {
	if bytes.IndexByte(data, '\r') >= 0 || bytes.Contains(data, []byte("\n\t")) || emptyFlowValue(data) {
		return nil, false
	}
	b, ok := findBlock(data)
	if !ok || explicitKey(data[b.start:b.end]) {
		return nil, false
	}
	cuts := b.cuts()
	if len(cuts) < 2 {
		return nil, false
	}
	blanks := bytes.Count(data[b.start:b.end], []byte("\n"))
	rest := make([]byte, 0, len(data)-(b.end-b.start)+blanks)
	rest = append(rest, data[:b.start]...)
	rest = append(rest, bytes.Repeat([]byte("\n"), blanks)...)
	rest = append(rest, data[b.end:]...)

	pieces := make([]*yaml.Node, len(cuts))
	var wg sync.WaitGroup
	for i, c := range cuts {
		end := b.end
		if i+1 < len(cuts) {
			end = cuts[i+1].at
		}
		wg.Go(func() { pieces[i] = parsePiece(data[c.at:end], c.line-1) })
	}
	root, err := parseWhole(file, rest)
	wg.Wait()
	if err != nil {
		return nil, false
	}
	return mergePieces(root, pieces, b.keyLine)
}

// parsePiece parses one piece of a plugins block, whose first line is the
// file's line shift+1, and returns its mapping with the file's lines, or
// nil when it does not parse as one block mapping.
func parsePiece(data []byte, shift int) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) != 1 {
		return nil
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode || m.Style != 0 || m.Tag != "!!map" || m.Anchor != "" {
		return nil
	}
	shiftLines(m, shift)
	return m
}

// shiftLines adds shift to the line of n and every node under it. An
// alias's target is under n too, so each node is shifted once.
func shiftLines(n *yaml.Node, shift int) {
	n.Line += shift
	for _, c := range n.Content {
		shiftLines(c, shift)
	}
}

// mergePieces puts the pieces of the plugins block, in order, in place of
// the empty value of the plugins key of root, the file parsed with the
// block blanked. It reports false when a piece did not parse, or root
// does not have the plugins key where the block's line says.
func mergePieces(root *yaml.Node, pieces []*yaml.Node, keyLine int) (*yaml.Node, bool) {
	if root == nil || root.Kind != yaml.MappingNode || root.Style != 0 {
		return nil, false
	}
	for _, p := range pieces {
		if p == nil {
			return nil, false
		}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Line != keyLine || k.Column != 1 {
			continue
		}
		if k.Kind != yaml.ScalarNode || k.Value != "plugins" || k.Style != 0 || k.Tag != "!!str" || !isNull(v) || v.Value != "" || v.Anchor != "" {
			return nil, false
		}
		m := pieces[0]
		for _, p := range pieces[1:] {
			m.Content = append(m.Content, p.Content...)
		}
		root.Content[i+1] = m
		return root, true
	}
	return nil, false
}

// findBlock finds the plugins block of data, and the lines in it that
// start a plugin entry: a name at the block's indentation. It reports
// false when there is no line "plugins:", a line of the block is less
// indented than its first, or the block is smaller than splitting.min.
func findBlock(data []byte) (block, bool) {
	var b block
	indent, at := 0, 0
	for i, text := range bytes.SplitAfter(data, []byte("\n")) {
		line := i + 1
		if b.keyLine == 0 {
			if string(text) == "plugins:\n" {
				b.keyLine, b.start, b.end = line, at+len(text), at+len(text)
			}
			at += len(text)
			continue
		}
		n := len(text) - len(bytes.TrimLeft(text, " "))
		switch {
		case n == len(text) || text[n] == '\n' || text[n] == '#':
			// a blank line or a comment
		case n == 0:
			return b, len(b.entries) > 0 && b.end-b.start >= splitting.min // the block ends
		case indent == 0 && !nameStart(text[n]):
			return b, false // not a block mapping of names
		case indent == 0:
			indent = n
			b.entries = append(b.entries, blockLine{at, line})
		case n < indent:
			return b, false
		case n == indent && nameStart(text[n]):
			b.entries = append(b.entries, blockLine{at, line})
		}
		at += len(text)
		b.end = at
	}
	return b, len(b.entries) > 0 && b.end-b.start >= splitting.min
}

// explicitKey reports whether the block may hold a "? key" without a
// value: yaml.v3 places that empty value at the token that follows it,
// which may be in the next piece.
func explicitKey(block []byte) bool {
	return bytes.Contains(block, []byte("? ")) || bytes.Contains(block, []byte("?\n"))
}

// nameStart reports whether c can start a plugin name, so that a line
// starting with it at the block's indentation is a key of the block.
func nameStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// cuts picks the entries where pieces start: the first, then one about
// every equal share of the block's bytes.
func (b block) cuts() []blockLine {
	pieces := splitting.pieces
	if pieces == 0 {
		pieces = 2 * runtime.GOMAXPROCS(0)
	}
	share := (b.end - b.start) / pieces
	cuts := []blockLine{b.entries[0]}
	for _, e := range b.entries[1:] {
		if e.at-cuts[len(cuts)-1].at >= share {
			cuts = append(cuts, e)
		}
	}
	return cuts
}
