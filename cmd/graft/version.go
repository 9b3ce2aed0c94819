package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at release time with -ldflags "-X main.version=v1.2.3".
var version = ""

// VersionCmd is `graft version`.
type VersionCmd struct{}

// Run prints graft's version, the Go version it was built with and the
// platform.
func (c *VersionCmd) Run(g *Globals) error {
	fmt.Fprintf(g.stdout, "graft %s (%s, %s/%s)\n", graftVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}

// graftVersion is the release version, else the module version go install
// recorded, else "devel" with the VCS revision when one was recorded.
func graftVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	v := "devel"
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}
