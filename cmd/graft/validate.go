package main

import (
	"fmt"

	"github.com/graftland/graft/spec"
)

// ValidateCmd is `graft validate [FILE]`.
type ValidateCmd struct {
	File string `arg:"" optional:"" default:"plugins.yaml" help:"The plugins file (default: plugins.yaml)."`
}

// Run checks the file and reports every problem at once.
func (c *ValidateCmd) Run(g *Globals) error {
	s, err := spec.Load(c.File)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "%s: valid: project %s, %s, %s.\n", c.File, s.Name,
		count(len(s.Plugins), "plugin", "plugins"), count(len(s.Runners), "runner", "runners"))
	return nil
}

func count(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
