package main

import (
	"fmt"
)

// ValidateCmd is `graft validate [FILE]`.
type ValidateCmd struct {
	File         string `arg:"" optional:"" help:"The plugins file (default: --file)."`
	ShowResolved bool   `name:"show-resolved" help:"Print the file with its variables resolved from the environment, and every env value masked as (sensitive)."`
}

// Run checks the file and reports every problem at once.
func (c *ValidateCmd) Run(g *Globals) error {
	defer batchGC()()
	file := g.fileArg(c.File)
	s, err := g.loadSpec(file)
	if err != nil {
		return err
	}
	if c.ShowResolved {
		out, err := s.Resolved()
		if err != nil {
			return err
		}
		_, err = g.stdout.Write(out)
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
