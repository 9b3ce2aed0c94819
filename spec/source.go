package spec

import "maps"

// Source is a plugins file as a host takes it, and as a saved plan
// carries it, so that applying the plan later applies exactly what was
// planned: its content, where it was read, and the variables it used.
type Source struct {
	// File is the plugins file's path as it was given.
	File string `json:"file"`
	// Dir is the absolute directory relative paths of the spec resolve in.
	Dir string `json:"dir"`
	// YAML is the file's content.
	YAML string `json:"yaml"`
	// DigestKey is, in a plan saved without a host, the one-time random
	// key its digests were made with (DigestKey.Hex), so that the
	// host that applies it can check Desired against YAML. It keys nothing
	// else, and the plan holds the env values themselves anyway. A plan
	// made by a host never holds the host's key.
	DigestKey string `json:"digestKey,omitempty"`
	// Vars are the variables YAML's ${VAR}s use, with their values, from
	// the environment of the graft command that sent it: a host resolves
	// the spec with these, never with its own environment. They may be
	// secrets: a saved plan and the host's applied.json are mode 0600.
	Vars map[string]string `json:"vars,omitempty"`
}

// Spec parses the desired spec a saved plan carries, with its Vars.
func (s *Source) Spec() (*Spec, error) { return s.SpecWith(nil) }

// SpecWith is Spec, digesting files with dg (a host's cache).
func (s *Source) SpecWith(dg Digester) (*Spec, error) {
	return ParseWith(s.File, s.Dir, []byte(s.YAML), Options{Lookup: VarsLookup(s.Vars), Digests: dg})
}

// SpecToStart is SpecWith for the host that is to start the spec's
// plugins (Options.Starts): what it plans and applies.
func (s *Source) SpecToStart(dg Digester) (*Spec, error) {
	return ParseWith(s.File, s.Dir, []byte(s.YAML), Options{Lookup: VarsLookup(s.Vars), Digests: dg, Starts: true})
}

// Equal reports whether s and o are the same source, variables included.
func (s Source) Equal(o Source) bool {
	return s.File == o.File && s.Dir == o.Dir && s.YAML == o.YAML && s.DigestKey == o.DigestKey && maps.Equal(s.Vars, o.Vars)
}

// IsZero reports whether s is the empty source.
func (s Source) IsZero() bool { return s.Equal(Source{}) }

// SourceOf is the source of a spec loaded from its file: what a host
// parses it from.
func SourceOf(s *Spec) Source {
	return Source{File: s.File, Dir: s.Dir, YAML: string(s.Text), Vars: s.Vars}
}
