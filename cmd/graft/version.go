package main

import (
	"fmt"
	"runtime"

	"github.com/graftland/graft/internal/skew"
)

// VersionCmd is `graft version`.
type VersionCmd struct{}

// Run prints graft's version (skew.Version), the Go version it was built
// with and the platform.
func (c *VersionCmd) Run(g *Globals) error {
	fmt.Fprintf(g.stdout, "graft %s (%s, %s/%s)\n", skew.Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
