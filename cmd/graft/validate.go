package main

import (
	"fmt"
)

// ValidateCmd is `graft validate [FILE]`.
type ValidateCmd struct {
	File string `arg:"" optional:"" help:"The plugins file (default: --file)."`
}

// Run checks the file and reports every problem at once.
func (c *ValidateCmd) Run(g *Globals) error {
	file := g.fileArg(c.File)
	s, err := g.loadSpec(file)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "%s: valid: project %s, %s, %s.\n", file, s.Name,
		count(len(s.Plugins), "plugin", "plugins"), count(len(s.Runners), "runner", "runners"))
	return nil
}

func count(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
