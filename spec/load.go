package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"sync/atomic"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// MaxSize is the most a spec may be, as written and once its variables
// are expanded: it bounds the memory that parsing one takes
// (docs/security.md, "Memory").
const MaxSize = 4 << 20

// Load reads, defaults and validates the plugins file at path. On a bad
// file the error is an Errors listing every problem.
func Load(path string) (*Spec, error) {
	data, err := Read(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse is Load on bytes already read. file names the source in errors;
// its directory anchors relative paths and the default project name.
func Parse(file string, data []byte) (*Spec, error) {
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	return ParseIn(file, dir, data)
}

// parses counts the plugins files this process has parsed.
var parses atomic.Int64

// Parses returns how many plugins files this process has parsed: tests
// hold a daemon to parsing a spec once per apply, and never for a status.
func Parses() int64 { return parses.Load() }

// ParseIn is Parse with the spec's directory given, for a spec read back
// from somewhere other than its file, such as a saved plan.
func ParseIn(file, dir string, data []byte) (*Spec, error) {
	return ParseWith(file, dir, data, Options{})
}

// ParseWith is ParseIn with options: where variables come from, and how
// files are digested.
func ParseWith(file, dir string, data []byte, opt Options) (*Spec, error) {
	parses.Add(1)
	if len(data) > MaxSize {
		return nil, Errors{{File: file, Pos: Pos{1, 1}, Msg: tooLarge}}
	}
	d := newDecoder(file)
	d.room = MaxSize - len(data)
	root, err := parseDocument(file, data, opt.whole)
	if err != nil {
		return nil, err
	}
	s := &Spec{File: file, Dir: dir, Text: data, Vars: map[string]string{}}
	// No value names a variable unless the file has a $, or a \ that
	// may escape one in a double-quoted string ("\x24{HOME}").
	if bytes.IndexByte(data, '$') >= 0 || bytes.IndexByte(data, '\\') >= 0 {
		d.substitute(root, "", opt.lookupOr(), s.Vars, map[*yaml.Node]bool{})
	}
	d.parallel = !opt.whole && concurrent(root)
	d.decode(root, reflect.ValueOf(s).Elem(), "")
	if _, ok := d.pos["plugins"]; !ok && root.Kind == yaml.MappingNode {
		d.errorf(nodePos(root), "plugins", "missing; write plugins: {} to declare none")
	}
	d.validateValues(s)
	s.applyDefaults()
	d.validateStructure(s)
	if opt.Starts && len(d.errs) == 0 {
		d.permitted(s)
	}
	if len(d.errs) == 0 {
		d.readContent(s, opt.Digests, opt.ReadTimeout)
	}
	if len(d.errs) > 0 {
		return nil, d.errs.sort()
	}
	s.expandReplicas()
	s.index()
	return s, nil
}

// parseDocument returns the root node of the file's one YAML document:
// parsed in pieces on every core when it is large (split.go), else whole.
func parseDocument(file string, data []byte, whole bool) (*yaml.Node, error) {
	if !whole {
		if root, ok := parseSplit(file, data); ok {
			return root, nil
		}
	}
	return parseWhole(file, data)
}

// parseWhole is parseDocument in one piece.
func parseWhole(file string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Errors{{File: file, Pos: Pos{1, 1}, Msg: "empty file; want a mapping with plugins:"}}
		}
		return nil, syntaxError(file, data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, Errors{{File: file, Pos: nodePos(&extra), Msg: "a second YAML document; a plugins file holds one"}}
	case !errors.Is(err, io.EOF):
		return nil, syntaxError(file, data, err)
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, Errors{{File: file, Pos: Pos{1, 1}, Msg: "empty file; want a mapping with plugins:"}}
	}
	return doc.Content[0], nil
}

// yamlLine finds the line in yaml.v3's syntax errors, which carry it only
// in their text ("yaml: line 3: did not find expected key"); yamlAnchor
// is one of those that carry none, found in the text instead.
var (
	yamlLine   = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	yamlAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
)

func syntaxError(file string, data []byte, err error) error {
	e := &Error{File: file, Msg: err.Error()}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		e.Pos.Line, _ = strconv.Atoi(m[1])
		e.Msg = "YAML syntax: " + m[2]
	} else if m := yamlAnchor.FindStringSubmatch(err.Error()); m != nil {
		e.Pos = offsetPos(data, aliasAt(data, m[1]))
		e.Msg = "YAML syntax: *" + m[1] + " names no anchor (&" + m[1] + ") written before it"
	} else if !utf8.Valid(data) {
		e.Pos = offsetPos(data, invalidUTF8(data))
		e.Msg = "not UTF-8: a plugins file is UTF-8 text"
	}
	return Errors{e}
}

// aliasAt is the offset of the first alias *name in data, -1 if none.
func aliasAt(data []byte, name string) int {
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte("*"+name))
		if j < 0 {
			return -1
		}
		at, end := i+j, i+j+1+len(name)
		if end == len(data) || bytes.IndexByte([]byte(" \t\r\n,]}"), data[end]) >= 0 {
			return at
		}
		i = at + 1
	}
}

// invalidUTF8 is the offset of the first byte of data that is not UTF-8.
func invalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// offsetPos is the line and column, in runes, of offset in data; none
// for -1.
func offsetPos(data []byte, offset int) Pos {
	if offset < 0 {
		return Pos{}
	}
	before := data[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return Pos{Line: line, Col: col}
}

// Read reads the plugins file at path, refusing one larger than MaxSize
// before it has all been read. A pipe is read to its end (graft validate
// <(generate)).
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxSize {
		return nil, Errors{{File: path, Pos: Pos{1, 1}, Msg: tooLarge}}
	}
	return data, nil
}

// tooLarge is the problem of a spec larger than MaxSize.
var tooLarge = fmt.Sprintf("larger than %d MiB, the most a plugins file may be", MaxSize>>20)
