package spec

import "gopkg.in/yaml.v3"

// A mapping's keys as the decoder reads them: in order, each once, with
// the keys of YAML's merge key (<<) under the explicit ones.

// entry is one key of a mapping, after merge keys are applied.
type entry struct {
	key     string
	keyNode *yaml.Node
	val     *yaml.Node
}

// node returns the node that positions an entry: the key for a collection,
// so that "missing command" points at the plugin's name; the value for a
// scalar, so that a bad value is pointed at itself.
func (e entry) node(val *yaml.Node) *yaml.Node {
	if resolve(val).Kind == yaml.ScalarNode {
		return val
	}
	return e.keyNode
}

// entries lists a mapping's keys in order. Explicit keys win over keys
// merged in with <<, as in YAML 1.1 merge; a repeated explicit key is an
// error, as it is for yaml.v3's own decoder.
func (d *decoder) entries(n *yaml.Node, path string) ([]entry, bool) {
	if n.Kind != yaml.MappingNode {
		d.errorf(nodePos(n), path, "want a mapping, got %s", describe(n))
		return nil, false
	}
	if !d.enter(n, path) {
		return nil, false
	}
	defer delete(d.open, n)
	var merged []entry
	out := make([]entry, 0, len(n.Content)/2)
	seen := keySet{out: &out}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !d.spend(n, path) {
			return nil, false
		}
		k, val := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errorf(nodePos(k), path, "want a string key, got %s", describe(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			merged = append(merged, d.merge(val, path)...)
			continue
		}
		if first, dup := seen.find(k.Value); dup {
			d.errorf(nodePos(k), join(path, k.Value), "repeated key %q (first at line %d)", k.Value, first.Line)
			continue
		}
		seen.add(entry{key: k.Value, keyNode: k, val: val})
	}
	for _, e := range merged {
		if _, ok := seen.find(e.key); !ok {
			seen.add(e)
		}
	}
	return out, true
}

// keySet is the entries of a mapping listed so far, found by key: by a
// scan while they are few, as a plugin's fields are, and through a map
// once they are many, as a large file's plugins are.
type keySet struct {
	out   *[]entry
	index map[string]*yaml.Node
}

// manyKeys is the number of entries from which a keySet keeps a map.
const manyKeys = 16

func (s *keySet) find(key string) (*yaml.Node, bool) {
	if s.index != nil {
		k, ok := s.index[key]
		return k, ok
	}
	for _, e := range *s.out {
		if e.key == key {
			return e.keyNode, true
		}
	}
	return nil, false
}

func (s *keySet) add(e entry) {
	*s.out = append(*s.out, e)
	switch {
	case s.index != nil:
		s.index[e.key] = e.keyNode
	case len(*s.out) > manyKeys:
		s.index = make(map[string]*yaml.Node, 2*len(*s.out))
		for _, e := range *s.out {
			s.index[e.key] = e.keyNode
		}
	}
}

// merge returns the entries that a << key brings in: one mapping, or a list
// of mappings where the earlier ones win.
func (d *decoder) merge(val *yaml.Node, path string) []entry {
	val = resolve(val)
	var sources []*yaml.Node
	switch val.Kind {
	case yaml.MappingNode:
		sources = []*yaml.Node{val}
	case yaml.SequenceNode:
		sources = val.Content
	default:
		d.errorf(nodePos(val), path, "<< wants a mapping or a list of mappings, got %s", describe(val))
		return nil
	}
	var out []entry
	have := map[string]bool{}
	for _, src := range sources {
		es, ok := d.entries(resolve(src), path)
		if !ok {
			continue
		}
		for _, e := range es {
			if !have[e.key] {
				have[e.key] = true
				out = append(out, e)
			}
		}
	}
	return out
}
