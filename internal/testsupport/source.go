package testsupport

import (
	"path/filepath"

	"github.com/graftland/graft/spec"
)

// Source is the plugins file of dir, dir/plugins.yaml, holding yaml, as a
// host takes it.
func Source(dir, yaml string) spec.Source {
	return spec.Source{File: filepath.Join(dir, "plugins.yaml"), Dir: dir, YAML: yaml}
}
