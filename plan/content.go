package plan

import (
	"strings"

	"github.com/graftland/graft/spec"
)

// fieldLabel names a changed field of p for people: the content fields
// name their file ("executable bin/api", "file conf/nginx.conf"), others
// are their own names. A field names files and env keys, never a value
// (docs/plan-format.md, "Content").
func fieldLabel(p *spec.Plugin, f string) string {
	switch {
	case f == "executable" && p.Run.Traits().Module:
		return "executable " + p.Module
	case f == "executable" && len(p.Command) > 0:
		return "executable " + p.Command[0]
	case strings.HasPrefix(f, "files[") && strings.HasSuffix(f, "]"):
		return "file " + f[len("files["):len(f)-1]
	}
	return f
}

// fieldLabels is fieldLabel of each of fields.
func fieldLabels(p *spec.Plugin, fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = fieldLabel(p, f)
	}
	return out
}
