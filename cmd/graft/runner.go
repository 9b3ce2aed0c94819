package main

import "errors"

// RunnerCmd is `graft runner`: the daemon that runs remote plugins for
// hosts on other machines.
type RunnerCmd struct{}

// Run serves until SIGTERM or SIGINT.
func (c *RunnerCmd) Run(g *Globals) error {
	return errors.New("graft runner: not built yet")
}
