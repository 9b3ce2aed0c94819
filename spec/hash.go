package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"reflect"
	"slices"
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
	if f, ok := s.fields[name]; ok {
		return maps.Clone(f)
	}
	return s.computeFields(name)
}

func (s *Spec) computeFields(name string) map[string]string {
	p := s.Plugins[name]
	out := map[string]string{}
	flatten(reflect.ValueOf(p).Elem(), "", out)
	if len(p.Uses) > 0 {
		out["uses"] = canonicalJSON(slices.Sorted(slices.Values(p.Uses))) // order of uses does not matter
	}
	if len(p.InheritEnv) > 0 {
		// The names only: their values are the host's, not the file's.
		out["inheritEnv"] = canonicalJSON(slices.Sorted(slices.Values(p.InheritEnv)))
	}
	maps.Copy(out, s.content[name]) // digests of the executable and files
	for k, v := range p.Env {
		out["env."+k] = canonicalJSON(s.key.envDigest(k, v))
	}
	if p.Run == Remote {
		// The runner's address decides which machine runs the process; its
		// token file and lease only shape the host's session with it.
		addr := ""
		if r := s.Runners[p.Runner]; r != nil {
			addr = r.Address
		}
		out["runner.address"] = canonicalJSON(addr)
	}
	return out
}

// Hash is the digest of Fields: "sha256:" and 64 hex digits. It covers
// env values only through their keyed HMACs: under another key, a plugin
// with env has another Hash.
func (s *Spec) Hash(name string) string {
	if h, ok := s.hashes[name]; ok {
		return h
	}
	return digestFields(s.computeFields(name))
}

// index fills the caches of Fields, Hash and Digest, under a fresh random
// key when s has none yet. A plugin's Fields under another key differ only
// in its env digests, so those of a plugin without env are taken from
// prev, the caches of s under another key, when given.
func (s *Spec) index(prev *Spec) {
	if s.key == (DigestKey{}) {
		s.key = NewDigestKey()
	}
	s.fields = make(map[string]map[string]string, len(s.Plugins))
	s.hashes = make(map[string]string, len(s.Plugins))
	names := make([]string, 0, len(s.Plugins))
	for name, p := range s.Plugins {
		if f, ok := prev.cachedFields(name); ok && len(p.Env) == 0 {
			s.fields[name], s.hashes[name] = f, prev.hashes[name]
			continue
		}
		names = append(names, name)
	}
	fields, hashes := make([]map[string]string, len(names)), make([]string, len(names))
	parallel(len(names), func(i int) {
		fields[i] = s.computeFields(names[i])
		hashes[i] = digestFields(fields[i])
	})
	for i, name := range names {
		s.fields[name], s.hashes[name] = fields[i], hashes[i]
	}
	s.digest = s.Digest()
}

// cachedFields returns the Fields that index cached for plugin name: nil
// s or a spec built by hand has none.
func (s *Spec) cachedFields(name string) (map[string]string, bool) {
	if s == nil || s.fields == nil {
		return nil, false
	}
	f, ok := s.fields[name]
	return f, ok
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
	if s.digest != "" {
		return s.digest
	}
	all := map[string]string{"name": canonicalJSON(s.Name)}
	for name, r := range s.Runners {
		flatten(reflect.ValueOf(r).Elem(), "runners."+name, all)
		all["runners."+name] = "{}"
	}
	for name := range s.Plugins {
		all["plugins."+name] = s.Hash(name)
	}
	return digestFields(all)
}

// flatten writes each set field of v under its yaml name, maps one entry
// per key and nested structs with a dotted prefix. Unset (zero) fields are
// left out, so adding a new optional field to graft does not change the
// hash of plugins that do not use it.
func flatten(v reflect.Value, prefix string, out map[string]string) {
	for _, fi := range fieldsOf(v.Type()) {
		f := v.Field(fi.index)
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
