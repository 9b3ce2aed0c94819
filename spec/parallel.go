package spec

import (
	"maps"
	"reflect"
	"slices"

	"gopkg.in/yaml.v3"
)

// A large file's plugins are decoded and checked on every core: each
// worker has a decoder of its own (a child), whose findings are merged
// into the parent's once all are done. The errors come out the same as
// from one decoder, since Errors are sorted and each plugin's checks read
// only what its own entry wrote, the file's runners and names, and the
// plugins it uses, none of which a worker writes.

// minParallel is the number of plugins from which they are decoded and
// checked on every core; tests lower it.
var minParallel = 512

// concurrent reports whether the plugins of a file whose tree is root can
// be decoded in parallel: the file has no aliases, so each node is decoded
// once, and is small enough that the node budget (maxNodes), which counts
// decoded nodes in order, cannot run out.
func concurrent(root *yaml.Node) bool {
	nodes, ok := 0, true
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		nodes++
		if n.Kind == yaml.AliasNode {
			ok = false
		}
		for _, c := range n.Content {
			if ok {
				walk(c)
			}
		}
	}
	walk(root)
	return ok && 2*nodes < maxNodes
}

// child returns a decoder for one worker of about items plugins. With
// shared, it reads what d recorded (and must not record anything itself);
// without, it records into maps of its own, made large enough for a
// plugin of a few fields each, one of them written as a scalar. Either
// way its errors are its own until adopted.
func (d *decoder) child(shared bool, items int) *decoder {
	c := newDecoder(d.file)
	c.parent = d
	if shared {
		c.pos, c.keys, c.text, c.seqs, c.values, c.until = d.pos, d.keys, d.text, d.seqs, d.values, d.until
	} else {
		c.pos, c.text = make(map[string]Pos, 4*items), make(map[string]string, items)
		c.keys, c.seqs = make(map[string]Pos, items), make(map[string]*yaml.Node, 2*items)
		c.values = make(map[string][]entry, items)
	}
	return c
}

// adopt takes in what the children found and recorded. A child records
// the paths of its plugins only, which the parent never does. The first
// child's maps were made for all the plugins (each): what d and the other
// children recorded is copied into them, which then are d's, so that no
// map grows while the others' are copied in.
func (d *decoder) adopt(children []*decoder) {
	if first := children[0]; !sameMap(first.pos, d.pos) {
		d.pos = into(first.pos, d.pos)
		d.keys = into(first.keys, d.keys)
		d.text = into(first.text, d.text)
		d.seqs = into(first.seqs, d.seqs)
		d.values = into(first.values, d.values)
		d.until = into(first.until, d.until)
		for _, c := range children[1:] {
			maps.Copy(d.pos, c.pos)
			maps.Copy(d.keys, c.keys)
			maps.Copy(d.text, c.text)
			maps.Copy(d.seqs, c.seqs)
			maps.Copy(d.values, c.values)
			maps.Copy(d.until, c.until)
		}
	}
	for _, c := range children {
		d.bad = grown(d.bad, c.bad)
		d.errs = append(d.errs, c.errs...)
		d.nodes += c.nodes
	}
}

// grown is dst with src's entries added: dst itself when it is the larger,
// else src, so that the larger map is never copied.
func grown[V any](dst, src map[string]V) map[string]V {
	if len(src) > len(dst) {
		dst, src = src, dst
	}
	maps.Copy(dst, src)
	return dst
}

// into is dst with src's entries added.
func into[V any](dst, src map[string]V) map[string]V {
	maps.Copy(dst, src)
	return dst
}

// sameMap reports whether a and b are one map.
func sameMap(a, b map[string]Pos) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// isBad reports whether the value at path could not be decoded or was
// reported: by d, or by the decoder d is a worker of.
func (d *decoder) isBad(path string) bool {
	return d.bad[path] || d.parent != nil && d.parent.bad[path]
}

// each calls f for each of n items on every core, each worker with a
// child of d, and merges the children into d.
func (d *decoder) each(n int, shared bool, f func(c *decoder, i int)) {
	workers := max(1, min(parallelism(), n))
	children := make([]*decoder, workers)
	for w := range children {
		items := n/workers + 1
		if w == 0 {
			items = n // its maps take in the others' (adopt)
		}
		children[w] = d.child(shared, items)
	}
	parallelRange(workers, n, func(w, i int) { f(children[w], i) })
	d.adopt(children)
}

// eachPlugin calls f for each of plugins, in order, or on every core for
// a large file's, each worker reading what d recorded.
func (d *decoder) eachPlugin(plugins []string, f func(d *decoder, name string)) {
	if !d.parallel || len(plugins) < minParallel {
		for _, name := range plugins {
			f(d, name)
		}
		return
	}
	d.each(len(plugins), true, func(c *decoder, i int) { f(c, plugins[i]) })
}

// pluginNames returns the names of s's plugins, sorted, sorting them once:
// the checks go through them in order, and a large file has thousands.
// The plugins are not added to or removed after decoding.
func (d *decoder) pluginNames(s *Spec) []string {
	if d.sorted == nil {
		d.sorted = slices.Sorted(maps.Keys(s.Plugins))
	}
	return d.sorted
}
