package main

import "github.com/graftland/graft"

// SchemaCmd is `graft schema`.
type SchemaCmd struct{}

// Run prints schema.json, for editors and CI linters.
func (c *SchemaCmd) Run(g *Globals) error {
	_, err := g.stdout.Write(graft.Schema)
	return err
}
