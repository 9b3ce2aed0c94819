package spec

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Options change how a plugins file is parsed (ParseWith).
type Options struct {
	// Lookup gives the value of a variable that a string value of the file
	// names as ${VAR} (docs/semantics.md, "Variables"); nil is the
	// environment of this process, os.LookupEnv.
	Lookup func(name string) (string, bool)
	// Digests digests the files a spec names (its executables, files:);
	// nil digests them without a cache kept across parses.
	Digests Digester
	// ReadTimeout bounds the reads of every file a spec names, all of
	// them together (DefaultReadTimeout when zero): a file whose read
	// never ends (a hung network mount) fails the parse, naming it.
	ReadTimeout time.Duration
	// Starts says the spec is parsed by the host that is to start its
	// plugins: the user and group of one that runs on this machine must
	// be ones this process can give (docs/semantics.md, "User and
	// group"), else the parse fails, before an apply stops anything.
	Starts bool
	// whole parses the file in one piece (never in pieces, split.go)
	// and decodes and checks it on one goroutine (never on every core,
	// parallel.go): the tests compare the two.
	whole bool
}

// VarsLookup is a Lookup that finds variables in vars only: a host
// resolves a spec with the variables the graft command sent, never with
// its own environment.
func VarsLookup(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// substitute replaces the variables of every string value under n (not
// of mapping keys), in place, and records in vars the value of each
// variable it used. A scalar that used a variable is re-resolved, so that
// elect.port: ${PORT} is the integer the variable holds.
func (d *decoder) substitute(n *yaml.Node, path string, lookup func(string) (string, bool), vars map[string]string, seen map[*yaml.Node]bool) {
	if seen[n] {
		return
	}
	seen[n] = true
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias != nil {
			d.substitute(n.Alias, path, lookup, vars, seen)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			d.substitute(n.Content[i+1], join(path, n.Content[i].Value), lookup, vars, seen)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			d.substitute(item, path+"["+strconv.Itoa(i)+"]", lookup, vars, seen)
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "$") {
			return
		}
		if d.room < 0 {
			return // the spec has outgrown MaxSize: said once
		}
		out, err := expand(n.Value, lookup, vars, len(n.Value)+d.room)
		if err == errTooLarge {
			d.room = -1
			d.errorf(nodePos(n), path, "with its variables expanded here, the spec is %s", tooLarge)
			return
		}
		if err != nil {
			d.errorf(nodePos(n), path, "%v", err)
			return
		}
		d.room -= len(out) - len(n.Value)
		if out != n.Value && n.Style == 0 {
			n.Tag = "" // plain: its type is what the value now reads as
		}
		if out != n.Value && out != "" {
			d.masked[path] = mask{resolved: out, written: n.Value}
		}
		n.Value = out
	}
}

// varError is a variable that is unset and has no default.
type varError struct{ name, message string }

func (e *varError) Error() string {
	if e.message != "" {
		return "${" + e.name + "}: " + e.message
	}
	return "variable " + e.name + " is not set, and ${" + e.name + "} has no default; set it, or write ${" + e.name + ":-default}"
}

// errTooLarge is an expansion that would outgrow its limit.
var errTooLarge = errorString("too large")

// expand resolves ${VAR}, ${VAR:-default} and ${VAR:?message} in s, and
// $$ to $. Any other $ is itself. A variable that is set but empty counts
// as unset for :- and :?, as in POSIX shells and docker compose. A result
// longer than limit bytes is errTooLarge, found before it is built.
func expand(s string, lookup func(string) (string, bool), vars map[string]string, limit int) (string, error) {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 || i == len(s)-1 {
			if b.Len()+len(s) > limit {
				return "", errTooLarge
			}
			b.WriteString(s)
			return b.String(), nil
		}
		if b.Len()+i > limit {
			return "", errTooLarge
		}
		b.WriteString(s[:i])
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			s = s[i+2:]
			continue
		case '{':
		default:
			b.WriteByte('$')
			s = s[i+1:]
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", errorString("unclosed ${ in " + quote(s[i:]) + "; write $$ for a literal $")
		}
		v, err := variable(s[i+2:i+end], lookup, vars)
		if err != nil {
			return "", err
		}
		if b.Len()+len(v) > limit {
			return "", errTooLarge
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

// variable resolves the inside of one ${...}.
func variable(expr string, lookup func(string) (string, bool), vars map[string]string) (string, error) {
	name, op, arg := expr, "", ""
	if i := strings.IndexByte(expr, ':'); i >= 0 && i+1 < len(expr) && (expr[i+1] == '-' || expr[i+1] == '?') {
		name, op, arg = expr[:i], expr[i:i+2], expr[i+2:]
	}
	if !envKeyRE.MatchString(name) {
		return "", errorString("bad variable ${" + expr + "}: want ${NAME}, ${NAME:-default} or ${NAME:?message}")
	}
	v, ok := lookup(name)
	if ok {
		vars[name] = v
	}
	if ok && (v != "" || op == "") {
		return v, nil
	}
	switch op {
	case ":-":
		return arg, nil
	case ":?":
		return "", &varError{name: name, message: orString(arg, "not set")}
	}
	return "", &varError{name: name}
}

// envKeyRE is the form of a variable's name, in ${...} and in env files.
var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

type errorString string

func (e errorString) Error() string { return string(e) }

func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func quote(s string) string { return "\"" + s + "\"" }

// lookupOr is opt's Lookup, or the environment.
func (o Options) lookupOr() func(string) (string, bool) {
	if o.Lookup != nil {
		return o.Lookup
	}
	return os.LookupEnv
}

// Sensitive is what Resolved shows for an env value.
const Sensitive = "(sensitive)"

// Resolved is the plugins file with its variables resolved, as graft
// validate --show-resolved prints it: every value of a plugin's env is
// masked as (sensitive), since env is where secrets go; the variables
// of other fields are shown resolved.
func (s *Spec) Resolved() ([]byte, error) {
	root, err := parseWhole(s.File, s.Text) // whole: its comments are printed too
	if err != nil {
		return nil, err
	}
	d := newDecoder(s.File)
	d.room = MaxSize - len(s.Text)
	d.substitute(root, "", VarsLookup(s.Vars), map[string]string{}, map[*yaml.Node]bool{})
	if len(d.errs) > 0 {
		return nil, d.errs.sort()
	}
	maskEnv(root)
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return []byte(b.String()), enc.Close()
}

// maskEnv replaces the values of plugins.*.env in the tree of root. An
// alias shared with another field is masked there too: safer than not.
func maskEnv(root *yaml.Node) {
	for _, p := range mappingValues(valueOf(root, "plugins")) {
		for _, v := range mappingValues(valueOf(p, "env")) {
			*v = yaml.Node{Kind: yaml.ScalarNode, Value: Sensitive, Line: v.Line, Column: v.Column}
		}
	}
}

// valueOf is the value of key in mapping n, or nil.
func valueOf(n *yaml.Node, key string) *yaml.Node {
	if n == nil {
		return nil
	}
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// mappingValues are the values of mapping n, through aliases.
func mappingValues(n *yaml.Node) []*yaml.Node {
	if n == nil {
		return nil
	}
	if n = resolve(n); n.Kind != yaml.MappingNode {
		return nil
	}
	var out []*yaml.Node
	for i := 1; i < len(n.Content); i += 2 {
		out = append(out, resolve(n.Content[i]))
	}
	return out
}
