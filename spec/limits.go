package spec

import (
	"maps"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/graftland/graft/launch"
)

// Umask is a process's umask, written as a quoted octal string ("007"):
// a YAML number is refused, since 007 reads as decimal 7 and 0o7 as
// octal, and either may not be what the operator meant.
type Umask string

func (u *Umask) fromScalar(n *yaml.Node) string {
	switch n.ShortTag() {
	case "!!str":
	case "!!int", "!!float":
		return "want a quoted octal string such as \"007\", got the number " + n.Value + ": a YAML number is ambiguous (007 reads as decimal 7, 0o7 as octal)"
	default:
		return "want a quoted octal string such as \"007\", got " + describe(n)
	}
	*u = Umask(n.Value)
	return ""
}

func (u *Umask) fromMapping() {}

// Limit is a resource limit: a number or unlimited sets soft and hard
// alike; {soft, hard} sets them apart.
type Limit struct {
	Soft launch.LimitValue `yaml:"soft"`
	Hard launch.LimitValue `yaml:"hard"`
}

func (l *Limit) fromScalar(n *yaml.Node) string {
	var v launch.LimitValue
	if err := v.UnmarshalText([]byte(n.Value)); err != nil {
		return err.Error()
	}
	l.Soft, l.Hard = v, v
	return ""
}

func (l *Limit) fromMapping() {}

// launchLimits is the plugin's limits as launch.Spec holds them.
func launchLimits(ls map[string]Limit) map[string]launch.Limit {
	if ls == nil {
		return nil
	}
	out := make(map[string]launch.Limit, len(ls))
	for k, l := range ls {
		out[k] = launch.Limit{Soft: l.Soft, Hard: l.Hard}
	}
	return out
}

// limitsValues checks that a limit written as {soft, hard} gives both,
// before launch's checks compare them: a limit found bad here, or whose
// soft or hard did not decode, is not compared.
func (d *decoder) limitsValues(p *Plugin, path string) {
	for _, name := range slices.Sorted(maps.Keys(p.Limits)) {
		lp := path + ".limits." + name
		if d.isBad(lp+".soft") || d.isBad(lp+".hard") {
			d.bad[lp] = true
			continue
		}
		_, soft := d.pos[lp+".soft"]
		_, hard := d.pos[lp+".hard"]
		if soft != hard && !d.isBad(lp) {
			d.errorf(d.at(lp), lp, "want both soft and hard, or one number (or unlimited) for both")
		}
	}
}
