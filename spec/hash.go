package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
)

// Fields is the canonical flat form of everything that makes up a plugin's
// process once defaults are applied: "command" → `["./api","--port","80"]`,
// "runner.address" → ..., each value in JSON. An env value is never there:
// "env.CACHE_ADDR" holds an HMAC of it under the spec's DigestKey, so that
// nothing made from Fields (Hash, Digest, FieldDigests) reveals it. Two
// specs that differ only in key order, comments, formatting, anchors or
// spelled-out defaults give equal Fields (under one key); any change that
// matters to the process changes at least one entry, and the changed keys
// are what a plan names as the reason for a replacement.
func (s *Spec) Fields(name string) map[string]string {
	if ix := s.indexed(); ix != nil {
		if f, ok := ix.fields[name]; ok {
			return maps.Clone(f)
		}
	}
	return s.computeFields(name)
}

func (s *Spec) computeFields(name string) map[string]string {
	p := s.Plugins[name]
	out := make(map[string]string, 8+len(p.Env)+len(s.content[name]))
	flattenPlugin(reflect.ValueOf(p).Elem(), out)
	if len(p.Uses) > 0 {
		out["uses"] = jsonSorted(p.Uses) // order of uses does not matter
	}
	if len(p.InheritEnv) > 0 {
		// The names only: their values are the host's, not the file's.
		out["inheritEnv"] = jsonSorted(p.InheritEnv)
	}
	maps.Copy(out, s.content[name]) // digests of the executable and files
	for k, v := range p.Env {
		out["env."+k] = s.key.envDigest(k, v)
	}
	if p.Run.Traits().Runner {
		// The runner's address decides which machine runs the process; its
		// token file and lease only shape the host's session with it.
		addr := ""
		if r := s.Runners[p.Runner]; r != nil {
			addr = r.Address
		}
		out["runner.address"] = jsonString(addr)
	}
	return out
}

// Hash is the digest of Fields: "sha256:" and 64 hex digits. It covers
// env values only through their keyed HMACs: under another key, a plugin
// with env has another Hash.
func (s *Spec) Hash(name string) string {
	if ix := s.indexed(); ix != nil {
		if h, ok := ix.hashes[name]; ok {
			return h
		}
	}
	return digestFields(s.computeFields(name))
}

// specIndex caches Fields, Hash and Digest of a loaded Spec, which is not
// changed after loading. It is filled on first use, once, so that a spec
// whose hashes are only wanted under another key (WithKey), or not at all
// (graft validate), is not hashed for nothing.
type specIndex struct {
	once   sync.Once
	filled atomic.Bool
	fields map[string]map[string]string
	hashes map[string]string
	digest string
	// prev is the index of the spec this one's was copied from under
	// another key: a plugin's Fields under another key differ only in
	// its env digests, so those of a plugin without env are taken from
	// prev when it is filled.
	prev *specIndex
}

// indexed returns s's caches, filled, or nil for a spec built by hand,
// which computes Fields, Hash and Digest on each call.
func (s *Spec) indexed() *specIndex {
	ix := s.idx
	if ix == nil {
		return nil
	}
	ix.once.Do(func() {
		s.fill(ix)
		ix.filled.Store(true)
	})
	return ix
}

// fill computes the Fields and Hash of every plugin, on every core, and
// the Digest.
func (s *Spec) fill(ix *specIndex) {
	ix.fields = make(map[string]map[string]string, len(s.Plugins))
	ix.hashes = make(map[string]string, len(s.Plugins))
	prev := ix.prev
	if prev != nil && !prev.filled.Load() {
		prev = nil
	}
	names := make([]string, 0, len(s.Plugins))
	for name, p := range s.Plugins {
		if prev != nil && len(p.Env) == 0 {
			if f, ok := prev.fields[name]; ok {
				ix.fields[name], ix.hashes[name] = f, prev.hashes[name]
				continue
			}
		}
		names = append(names, name)
	}
	fields, hashes := make([]map[string]string, len(names)), make([]string, len(names))
	parallel(len(names), func(i int) {
		fields[i] = s.computeFields(names[i])
		hashes[i] = digestFields(fields[i])
	})
	for i, name := range names {
		ix.fields[name], ix.hashes[name] = fields[i], hashes[i]
	}
	ix.digest = s.digestOf(func(name string) string { return ix.hashes[name] })
}

// index gives a loaded s its caches, to fill on first use, and a fresh
// random key when it has none yet.
func (s *Spec) index() {
	if s.key == (DigestKey{}) {
		s.key = NewDigestKey()
	}
	s.idx = &specIndex{}
}

// FieldDigests maps each of a plugin's Fields to a short digest of its
// value, so that running state can say which fields a later spec changes
// without holding the values. An env field's value is already an HMAC
// under the spec's key (Fields), so its digest reveals nothing of the env
// value to whoever lacks the key.
func FieldDigests(fields map[string]string) map[string]string {
	out := make(map[string]string, len(fields))
	for k, v := range fields {
		sum := sha256.Sum256([]byte(v))
		out[k] = hex.EncodeToString(sum[:8])
	}
	return out
}

// Digest identifies the whole desired spec: project, runners and each
// plugin's hash (keyed as Hash is).
func (s *Spec) Digest() string {
	if ix := s.indexed(); ix != nil {
		return ix.digest
	}
	return s.digestOf(s.Hash)
}

// digestOf is Digest with each plugin's Hash given by hash.
func (s *Spec) digestOf(hash func(name string) string) string {
	all := map[string]string{"name": canonicalJSON(s.Name)}
	for name, r := range s.Runners {
		flatten(reflect.ValueOf(r).Elem(), "runners."+name, all)
		all["runners."+name] = "{}"
	}
	for name := range s.Plugins {
		all["plugins."+name] = hash(name)
	}
	return digestFields(all)
}

// flattenPlugin is flatten of a plugin, but for its env, whose entries
// computeFields writes as their digests: flatten would write each value,
// to be written over.
func flattenPlugin(v reflect.Value, out map[string]string) {
	flattenFields(v, "", out, func(fi fieldInfo) bool { return fi.name == "env" })
}

// flatten writes each set field of v under its yaml name, maps one entry
// per key and nested structs with a dotted prefix. Unset (zero) fields are
// left out, so adding a new optional field to graft does not change the
// hash of plugins that do not use it.
func flatten(v reflect.Value, prefix string, out map[string]string) {
	flattenFields(v, prefix, out, nil)
}

// flattenFields is flatten, leaving out v's own fields for which skip,
// when given, is true.
func flattenFields(v reflect.Value, prefix string, out map[string]string, skip func(fieldInfo) bool) {
	for _, fi := range fieldsOf(v.Type()) {
		if skip != nil && skip(fi) {
			continue
		}
		f := v.FieldByIndex(fi.index)
		if f.IsZero() {
			continue
		}
		key := fi.name
		if prefix != "" {
			key = prefix + "." + fi.name
		}
		switch fi.shape {
		case shapeStructPtr:
			flatten(f.Elem(), key, out)
			out[key] = "{}" // present, even when every field is defaulted away
		case shapeStruct:
			flatten(f, key, out)
		case shapeMap:
			for it := f.MapRange(); it.Next(); {
				out[key+"."+it.Key().String()] = jsonValue(it.Value())
			}
		default:
			out[key] = jsonValue(f)
		}
	}
}
