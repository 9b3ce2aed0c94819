package main

import (
	"path/filepath"

	"github.com/graftland/graft/internal/contentdigest"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/spec"
)

// loadSpec reads the plugins file at file with the variables of graft's
// environment, digesting the files it names through the digest cache of
// its state dir when that is there and can be trusted, so that a plan
// does not read an unchanged binary again (docs/state-dir.md).
func (g *Globals) loadSpec(file string) (*spec.Spec, error) {
	data, err := spec.Read(file)
	if err != nil {
		return nil, err
	}
	return g.parseSpec(file, data)
}

// parseSpec is loadSpec on the file's content, already read.
func (g *Globals) parseSpec(file string, data []byte) (*spec.Spec, error) {
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	var dg spec.Digester
	cache := filepath.Join(g.stateDir(file), statedir.Digests)
	if safefs.Check(cache) == nil {
		dg = contentdigest.New(cache)
	}
	return spec.ParseWith(file, dir, data, spec.Options{Digests: dg})
}
