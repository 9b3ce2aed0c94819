package spec

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// maxNodes bounds the nodes the decoder visits, so a file of nested aliases
// (a "billion laughs") fails instead of exhausting memory.
const maxNodes = 1 << 20

// decoder fills Go values from a YAML node tree. Unlike yaml.v3's own
// decoder it keeps going after an error, so that Load reports every problem
// of a file at once, and it records where each field was written so that
// validation can point at it.
type decoder struct {
	file string
	errs Errors
	pos  map[string]Pos        // where each field's value was written (see entry.node)
	keys map[string]Pos        // where each map entry's key was written
	text map[string]string     // what each scalar field was written as
	seqs map[string]*yaml.Node // each list, by path
	// values holds the entries of each mapping of strings (env), by path:
	// where each of its entries was written is found through them
	// (entryAt) rather than recorded, since a large file has tens of
	// thousands.
	values map[string][]entry
	until  map[string]Condition // the condition of each long-form uses entry, by path
	bad    map[string]bool      // paths whose value could not be decoded
	// masked is what each value that used a variable was written as: an
	// error at its path quotes that, never the value, which may be a
	// secret (errorf).
	masked map[string]mask
	nodes  int
	// room is how many bytes the expansion of variables may still add
	// before the spec outgrows MaxSize; below zero once it has.
	room int
	// open holds the mappings being listed, to refuse a merge of one into
	// itself ("&a {<<: *a}"), which would never end. Other aliases cannot
	// loop: each level of decoding is a level of graft's Go types.
	open map[*yaml.Node]bool
	// parallel lets the plugins of a large file be decoded and checked on
	// every core (parallel.go); parent is the decoder of which this one
	// is a worker.
	parallel bool
	parent   *decoder
	sorted   []string // pluginNames
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, pos: map[string]Pos{}, keys: map[string]Pos{}, text: map[string]string{}, seqs: map[string]*yaml.Node{}, values: map[string][]entry{}, until: map[string]Condition{}, bad: map[string]bool{}, open: map[*yaml.Node]bool{}, masked: map[string]mask{}}
}

func nodePos(n *yaml.Node) Pos { return Pos{Line: n.Line, Col: n.Column} }

func (d *decoder) errorf(p Pos, path, format string, args ...any) {
	d.bad[path] = true
	msg := fmt.Sprintf(format, args...)
	if m, ok := d.maskOf(path); ok {
		msg = strings.ReplaceAll(msg, strconv.Quote(m.resolved), strconv.Quote(m.written))
		msg = strings.ReplaceAll(msg, m.resolved, m.written)
	}
	d.errs = append(d.errs, &Error{File: d.file, Pos: p, Path: path, Msg: msg})
}

// mask is a value that used a variable: as resolved, and as written
// ("${SIGNAL}").
type mask struct{ resolved, written string }

// maskOf is what the value at path, or at the field path is in, was
// written as, when it used a variable. The masks are made before
// decoding begins, and only read after: the decoders of a large file's
// plugins (parallel.go) read their parent's.
func (d *decoder) maskOf(path string) (mask, bool) {
	for d.parent != nil {
		d = d.parent
	}
	for {
		if m, ok := d.masked[path]; ok {
			return m, true
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return mask{}, false
		}
		path = path[:i]
	}
}

// at returns where path was written, or the position of the closest
// enclosing field that was.
func (d *decoder) at(path string) Pos {
	for {
		if p, ok := d.pos[path]; ok {
			return p
		}
		if e, ok := d.entryAt(path); ok {
			return nodePos(e.node(e.val))
		}
		if item, ok := d.item(path); ok {
			return nodePos(item)
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return Pos{Line: 1, Col: 1}
		}
		path = path[:i]
	}
}

// item returns the node of a list item path such as plugins.api.uses[2].
// Items are found through their list, rather than recorded one by one,
// since long files have many.
func (d *decoder) item(path string) (*yaml.Node, bool) {
	open := strings.LastIndexByte(path, '[')
	if open < 0 || !strings.HasSuffix(path, "]") {
		return nil, false
	}
	seq, ok := d.seqs[path[:open]]
	i, err := strconv.Atoi(path[open+1 : len(path)-1])
	if !ok || err != nil || i < 0 || i >= len(seq.Content) {
		return nil, false
	}
	return seq.Content[i], true
}

// entryAt returns the entry at path of a mapping of strings (values),
// such as plugins.api.env.PORT: its mapping's path ends in ".env" (the
// one field that is a mapping of strings), and the key may hold dots.
func (d *decoder) entryAt(path string) (entry, bool) {
	if len(d.values) == 0 {
		return entry{}, false
	}
	const field = ".env."
	for from := 0; ; {
		i := strings.Index(path[from:], field)
		if i < 0 {
			return entry{}, false
		}
		i += from
		if es, ok := d.values[path[:i+len(field)-1]]; ok {
			key := path[i+len(field):]
			for _, e := range es {
				if e.key == key {
					return e, true
				}
			}
		}
		from = i + 1
	}
}

// atKey returns where the key of the map entry at path was written.
func (d *decoder) atKey(path string) Pos {
	if p, ok := d.keys[path]; ok {
		return p
	}
	if e, ok := d.entryAt(path); ok {
		return nodePos(e.keyNode)
	}
	return d.at(path)
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	stringsType     = reflect.TypeFor[[]string]()
)

// decode fills v from n. A null leaves v unset; the caller decides whether
// that is allowed.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if !d.spend(n, path) {
		return
	}
	n = resolve(n)
	if isNull(n) {
		return
	}
	if s, ok := addr(v).(shorthand); ok {
		switch n.Kind {
		case yaml.ScalarNode: // a files entry written as its path, once: true
			if problem := s.fromScalar(n); problem != "" {
				d.errorf(nodePos(n), path, "%s", problem)
			}
			return
		case yaml.MappingNode:
			defer s.fromMapping()
		}
	}
	if v.CanAddr() && v.Addr().Type().Implements(textUnmarshaler) {
		if !d.scalar(n, path, "a string") {
			return
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			d.errorf(nodePos(n), path, "%v", err)
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
	case reflect.Struct:
		d.structure(n, v, path)
	case reflect.Map:
		d.mapping(n, v, path)
	case reflect.Slice:
		d.sequence(n, v, path)
	case reflect.String:
		// Any scalar is text here: an env value written 8080 or true means
		// the string the operator typed, as docker compose reads it.
		if d.scalar(n, path, "a string") {
			v.SetString(n.Value)
		}
	case reflect.Int, reflect.Float64, reflect.Bool:
		d.number(n, v, path)
	default:
		panic(fmt.Sprintf("spec: cannot decode into %s", v.Type()))
	}
}

// addr is a pointer to v when v is addressable, else nil.
func addr(v reflect.Value) any {
	if !v.CanAddr() {
		return nil
	}
	return v.Addr().Interface()
}

// spend counts a node visited and reports false, once with an error, when
// the file has used up maxNodes.
func (d *decoder) spend(n *yaml.Node, path string) bool {
	if d.nodes++; d.nodes <= maxNodes {
		return true
	}
	if d.nodes == maxNodes+1 {
		d.errorf(nodePos(n), path, "document too large: more than %d nodes after expanding aliases", maxNodes)
	}
	return false
}

// enter marks a collection as being read and reports false, with an
// error, when it already is: an alias inside it refers back to it.
func (d *decoder) enter(n *yaml.Node, path string) bool {
	if d.open[n] {
		d.errorf(nodePos(n), path, "an alias refers to a node that contains it")
		return false
	}
	d.open[n] = true
	return true
}

// element decodes a list item or map value, where a null is an error
// rather than "unset".
func (d *decoder) element(n *yaml.Node, v reflect.Value, path string) {
	if isNull(resolve(n)) {
		if v.Kind() == reflect.String {
			d.errorf(nodePos(n), path, "null is not a string; write \"\" for an empty one")
		} else {
			d.errorf(nodePos(n), path, "empty; want %s", want(v.Type()))
		}
		return
	}
	d.decode(n, v, path)
}

func (d *decoder) scalar(n *yaml.Node, path, want string) bool {
	if n.Kind == yaml.ScalarNode {
		return true
	}
	d.errorf(nodePos(n), path, "want %s, got %s", want, describe(n))
	return false
}

func (d *decoder) number(n *yaml.Node, v reflect.Value, path string) {
	tags := map[reflect.Kind][]string{
		reflect.Int:     {"!!int"},
		reflect.Float64: {"!!int", "!!float"},
		reflect.Bool:    {"!!bool"},
	}[v.Kind()]
	want := map[reflect.Kind]string{reflect.Int: "an integer", reflect.Float64: "a number", reflect.Bool: "true or false"}[v.Kind()]
	if n.Kind != yaml.ScalarNode || !slices.Contains(tags, n.ShortTag()) {
		d.errorf(nodePos(n), path, "want %s, got %s", want, describe(n))
		return
	}
	if err := n.Decode(v.Addr().Interface()); err != nil {
		d.errorf(nodePos(n), path, "want %s, got %q (%v)", want, n.Value, err)
	}
}

func (d *decoder) sequence(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(nodePos(n), path, "want a list, got %s", describe(n))
		return
	}
	d.seqs[path] = n
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	strs := v.Type() == usesType || v.Type() == stringsType
	for i, item := range n.Content {
		if strs && item.Kind == yaml.ScalarNode && d.nodes < maxNodes && !isNull(item) {
			// What element, or useItem, does with a string written as
			// one, without the item's path, which only an error needs.
			d.nodes++
			s.Index(i).SetString(item.Value)
			continue
		}
		ip := path + "[" + strconv.Itoa(i) + "]"
		if v.Type() == usesType {
			d.useItem(item, s.Index(i).Addr().Interface().(*string), ip)
			continue
		}
		d.element(item, s.Index(i), ip)
	}
	v.Set(s)
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	entries, ok := d.entries(n, path)
	if !ok {
		return
	}
	entriesOf := v.Type().Elem().Kind() == reflect.Pointer // plugins and runners, not env
	strs := v.Type().Elem().Kind() == reflect.String       // env
	if strs {
		d.values[path] = entries // entryAt finds each entry's position
	}
	elems := make([]reflect.Value, len(entries))
	entry := func(d *decoder, i int) {
		e := entries[i]
		p := join(path, e.key)
		if entriesOf && e.key == "shutdownTimeout" {
			d.fixedShutdownTimeout(e.keyNode, p)
			return
		}
		if !strs {
			d.record(p, e)
			d.keys[p] = nodePos(e.keyNode)
		}
		elems[i] = reflect.New(v.Type().Elem()).Elem()
		d.element(e.val, elems[i], p)
	}
	if path == "plugins" && d.parallel && len(entries) >= minParallel {
		d.each(len(entries), false, entry)
	} else {
		for i := range entries {
			entry(d, i)
		}
	}
	m := reflect.MakeMapWithSize(v.Type(), len(entries))
	for i, e := range entries {
		if elems[i].IsValid() {
			m.SetMapIndex(reflect.ValueOf(e.key).Convert(v.Type().Key()), elems[i])
		}
	}
	v.Set(m)
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	entries, ok := d.entries(n, path)
	if !ok {
		return
	}
	fields, names := yamlFields(v.Type())
	for _, e := range entries {
		p := join(path, e.key)
		i, known := fields[e.key]
		switch {
		case known && isNull(resolve(e.val)):
			// A field written as null (or left empty) is unset, as in
			// yaml.v3 and Kubernetes: its default applies.
		case known:
			d.record(p, e)
			d.decode(e.val, v.FieldByIndex(i), p)
		case e.key == "shutdownTimeout":
			d.fixedShutdownTimeout(e.keyNode, p)
		default:
			d.errorf(nodePos(e.keyNode), p, "unknown field%s", suggestion(e.key, names))
		}
	}
}

// structFields is a struct type's fields by yaml name, and the names in
// order, for suggestions.
type structFields struct {
	index map[string][]int
	names []string
}

// structFieldsOf caches yamlFields by type: a large file has thousands of
// plugins, and reading struct tags through reflection for each is costly.
var structFieldsOf sync.Map // reflect.Type → structFields

// yamlFields returns the fields of struct type t by yaml name, as indexes
// for reflect.Value.FieldByIndex: the fields of a struct embedded with
// `yaml:",inline"` (launch.Probe in a ready block) are written as the
// outer struct's own.
func yamlFields(t reflect.Type) (map[string][]int, []string) {
	if f, ok := structFieldsOf.Load(t); ok {
		return f.(structFields).index, f.(structFields).names
	}
	f := structFields{index: map[string][]int{}}
	for _, yf := range yamlFieldList(t) {
		f.index[yf.name] = yf.index
		f.names = append(f.names, yf.name)
	}
	structFieldsOf.Store(t, f)
	return f.index, f.names
}

// yamlField is a field of a struct type by its yaml name, and its index
// for reflect.Value.FieldByIndex.
type yamlField struct {
	name  string
	index []int
}

// yamlFieldList lists the fields of struct type t that have a yaml name,
// in order, those of a struct embedded inline in its place.
func yamlFieldList(t reflect.Type) []yamlField {
	var out []yamlField
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		switch {
		case opts == "inline" && sf.Anonymous && sf.Type.Kind() == reflect.Struct:
			for _, in := range yamlFieldList(sf.Type) {
				out = append(out, yamlField{name: in.name, index: append([]int{i}, in.index...)})
			}
		case name != "" && name != "-":
			out = append(out, yamlField{name: name, index: []int{i}})
		}
	}
	return out
}

// fixedShutdownTimeout reports a shutdownTimeout key, wherever it is
// written: the graceful stop is fixed at 5 seconds in YAML
// (docs/semantics.md, "Windows and defaults"), and saying so beats "unknown
// field".
func (d *decoder) fixedShutdownTimeout(key *yaml.Node, path string) {
	d.errorf(nodePos(key), path, "shutdownTimeout is fixed at 5 seconds in YAML; only the Go API can change it")
}

// record notes where the entry at path was written (entry.node) and,
// when its value is a scalar, what it was written as, for messages that
// quote it. A collection's text is never asked for: a large file has
// tens of thousands.
func (d *decoder) record(path string, e entry) {
	d.pos[path] = nodePos(e.node(e.val))
	if v := resolve(e.val); v.Kind == yaml.ScalarNode {
		d.text[path] = v.Value
	}
}

func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// want names the YAML shape that fills a Go type, for messages.
func want(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return want(t.Elem())
	case reflect.Struct, reflect.Map:
		return "a mapping ({} for all defaults)"
	case reflect.Slice:
		return "a list"
	}
	return "a value"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an unexpected node"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
