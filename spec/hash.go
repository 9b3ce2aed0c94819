package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
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
// key when s has none yet.
func (s *Spec) index() {
	if s.key == (DigestKey{}) {
		s.key = NewDigestKey()
	}
	s.fields = make(map[string]map[string]string, len(s.Plugins))
	s.hashes = make(map[string]string, len(s.Plugins))
	for name := range s.Plugins {
		f := s.computeFields(name)
		s.fields[name], s.hashes[name] = f, digestFields(f)
	}
	s.digest = s.Digest()
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

func digestFields(fields map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		fmt.Fprintf(h, "%s\x00%s\n", k, fields[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// flatten writes each set field of v under its yaml name, maps one entry
// per key and nested structs with a dotted prefix. Unset (zero) fields are
// left out, so adding a new optional field to graft does not change the
// hash of plugins that do not use it.
func flatten(v reflect.Value, prefix string, out map[string]string) {
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		f := v.Field(i)
		if name == "" || name == "-" || f.IsZero() {
			continue
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		switch {
		case f.Kind() == reflect.Pointer && f.Elem().Kind() == reflect.Struct:
			flatten(f.Elem(), key, out)
			out[key] = "{}" // present, even when every field is defaulted away
		case f.Kind() == reflect.Struct && !f.Type().Implements(textMarshaler):
			flatten(f, key, out)
		case f.Kind() == reflect.Map:
			for _, k := range f.MapKeys() {
				out[key+"."+k.String()] = canonicalJSON(f.MapIndex(k).Interface())
			}
		default:
			out[key] = canonicalJSON(f.Interface())
		}
	}
}

var textMarshaler = reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()

func canonicalJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("spec: marshal %T: %v", v, err)) // only plain data reaches here
	}
	return string(b)
}
