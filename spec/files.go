package spec

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/graftland/graft/internal/contentdigest"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/launch"
)

// File is an entry of a plugin's files: a file, or a directory taken
// whole, whose content is part of the plugin's state (docs/semantics.md,
// "Content"). It is written as its path alone, or as {path, onChange}.
type File struct {
	// Path is relative to the spec's directory.
	Path string `yaml:"path"`
	// OnChange is what a change of the content does; default replace.
	OnChange OnChange `yaml:"onChange"`
}

// OnChange is what a change of a file's content does to its plugin.
type OnChange string

// The onChange values.
const (
	OnChangeReplace OnChange = "replace" // the plugin is replaced
	OnChangeReload  OnChange = "reload"  // the plugin gets its reloadSignal
	OnChangeNone    OnChange = "none"    // nothing: the file must exist, its content does not matter
)

// OnChanges lists the onChange values.
var OnChanges = []OnChange{OnChangeReplace, OnChangeReload, OnChangeNone}

// fromScalar is the short form of a files entry, its path alone.
func (f *File) fromScalar(n *yaml.Node) string {
	f.Path = n.Value
	return ""
}

// fromMapping has nothing to add to a files entry's fields.
func (f *File) fromMapping() {}

// shorthand is a type written as a scalar as well as a mapping.
// fromScalar fills it from the scalar, or says what is wrong with it;
// fromMapping is called once the mapping's fields are decoded.
type shorthand interface {
	fromScalar(n *yaml.Node) (problem string)
	fromMapping()
}

// Digester digests the content of a file or directory;
// contentdigest.Cache is one.
type Digester interface {
	Digest(path string) (string, error)
}

// holder is a Digester that a parse holds while it digests, so that no
// prune of its cache removes what it is about to use
// (contentdigest.Cache.Hold).
type holder interface {
	Hold() (release func())
}

// hold holds dg when it is a holder; release ends the hold.
func hold(dg Digester) (release func()) {
	if h, ok := dg.(holder); ok {
		return h.Hold()
	}
	return func() {}
}

// The content fields of Fields: the executable's digest, and each file's.
const executableField = "executable"

// FileField is the field of Fields that holds the digest of files entry
// path: "files[conf/nginx.conf]".
func FileField(path string) string { return "files[" + path + "]" }

// filesValues checks the files entries and reloadSignal of a plugin and
// fills in the entries' default onChange. A file with onChange: reload
// needs a reload of the plugin's own: graft does not guess a signal that
// the program may ignore (docs/semantics.md, "Reloads").
func (d *decoder) filesValues(p *Plugin, path string) {
	if d.written(path + ".reloadSignal") {
		if pr := launch.SignalProblem("reloadSignal", p.ReloadSignal); pr != nil {
			d.problem(path, pr)
		}
		if d.written(path + ".reload") {
			d.errorf(d.at(path+".reloadSignal"), path+".reloadSignal", "reloadSignal is the short form of reload: {signal: ...}; give one of them")
		}
	}
	declared := d.written(path+".reload") || d.written(path+".reloadSignal")
	for i := range p.Files {
		f, fp := &p.Files[i], fmt.Sprintf("%s.files[%d]", path, i)
		switch {
		case f.Path == "":
			d.errorf(d.at(fp), fp, "empty path")
		case f.OnChange == "":
			f.OnChange = OnChangeReplace
		case !slices.Contains(OnChanges, f.OnChange):
			d.errorf(d.at(fp+".onChange"), fp+".onChange", "unknown onChange %q; want replace, reload or none", f.OnChange)
		case f.OnChange == OnChangeReload && p.Run.Traits().NoReload != "":
			d.errorf(d.at(fp+".onChange"), fp+".onChange", "%s", p.Run.Traits().NoReload)
		case f.OnChange == OnChangeReload && !declared:
			d.errorf(d.at(fp+".onChange"), fp+".onChange",
				"the plugin declares no reload: add reloadSignal: SIGHUP, or reload: {signal: ..., check: [...]} or reload: {command: [...]}")
		}
	}
}

// readContent reads what the spec's plugins depend on beyond the file
// itself: it merges each plugin's env files into its env and digests
// its executable and files, for Fields. A missing file or env file, or a
// bad line of one, is an error at the entry that names it.
func (d *decoder) readContent(s *Spec, dg Digester, timeout time.Duration) {
	if dg == nil {
		dg = contentdigest.New("")
	}
	if timeout <= 0 {
		timeout = DefaultReadTimeout
	}
	defer hold(dg)()
	dg = &onceEach{dg: dg, sums: map[string]digest{}, deadline: time.Now().Add(timeout), timeout: timeout}
	s.content = make(map[string]map[string]string, len(s.Plugins))
	s.sources = map[string]string{}
	for _, name := range d.pluginNames(s) {
		p, path := s.Plugins[name], "plugins."+name
		c := map[string]string{}
		d.envFiles(s, p, path, dg)
		if exe := s.executable(p); exe != "" {
			if sum, err := dg.Digest(exe); err == nil {
				c[executableField] = sum
				s.sources[exe] = sum
			} // else: not a file here; the start says why
		}
		for i, f := range p.Files {
			fp := fmt.Sprintf("%s.files[%d]", path, i)
			full := s.Path(f.Path)
			if f.OnChange == OnChangeNone {
				// Not part of the plugin's state: not read, only there.
				if _, err := os.Stat(full); err != nil {
					d.errorf(d.at(fp), fp, "%s: %v", f.Path, cause(err))
				}
				continue
			}
			sum, err := dg.Digest(full)
			if err != nil {
				d.errorf(d.at(fp), fp, "%s: %v", f.Path, cause(err))
				continue
			}
			s.sources[full] = sum
			c[FileField(f.Path)] = sum
		}
		s.content[name] = c
	}
}

// onceEach digests each path once per parse: the plugins of a large file
// often share an executable, which is the same file for all of them. The
// digests of one parse end by its deadline: a read still under way then
// (a hung network mount) fails its entry, and is left to end on its own.
type onceEach struct {
	dg       Digester
	sums     map[string]digest
	deadline time.Time
	timeout  time.Duration
}

// digest is the result of Digester.Digest.
type digest struct {
	sum string
	err error
}

func (o *onceEach) Digest(path string) (string, error) {
	r, ok := o.sums[path]
	if !ok {
		r = o.bounded(path)
		o.sums[path] = r
	}
	return r.sum, r.err
}

// bounded is the digest of path, or an error once the parse's deadline
// has passed.
func (o *onceEach) bounded(path string) digest {
	late := fmt.Errorf("not read within %s, which bounds the reads of a spec's files: a file whose read never ends (a hung network mount, a device) cannot be a plugin's", FromStd(o.timeout))
	left := time.Until(o.deadline)
	if left <= 0 {
		return digest{err: late}
	}
	done := make(chan digest, 1)
	go func() {
		var r digest
		r.sum, r.err = o.dg.Digest(path)
		done <- r
	}()
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case r := <-done:
		return r
	case <-t.C:
		return digest{err: late}
	}
}

// envFiles reads plugin p's env files, in order, and sets p.Env to what
// they hold, later files over earlier ones and env over them all.
func (d *decoder) envFiles(s *Spec, p *Plugin, path string, dg Digester) {
	if len(p.EnvFile) == 0 {
		return
	}
	env := map[string]string{}
	for i, f := range p.EnvFile {
		fp := fmt.Sprintf("%s.envFile[%d]", path, i)
		full := s.Path(f)
		data, err := safefs.ReadFile(full, maxEnvFile)
		if err != nil {
			d.errorf(d.at(fp), fp, "%s: %v", f, cause(err))
			continue
		}
		vals, err := parseEnvFile(string(data))
		if err != nil {
			d.errorf(d.at(fp), fp, "%s:%v", f, strings.TrimPrefix(err.Error(), "line "))
			continue
		}
		if sum, err := dg.Digest(full); err == nil {
			s.sources[full] = sum
		}
		maps.Copy(env, vals)
	}
	maps.Copy(env, p.Env)
	p.Env = env
}

// cause is err without the path an *os.PathError repeats.
func cause(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// executable is the file plugin p's process runs, as its start will find
// it (internal/proc): command[0] with a slash relative to the plugin's
// dir, else the first executable of that name on the PATH of its env, or
// of graft's; a worker's module. "" when there is none here: a runner's
// with an address runs on another machine.
func (s *Spec) executable(p *Plugin) string {
	switch t := p.Run.Traits(); {
	case t.Module && p.Module != "":
		return s.Path(p.Module)
	case t.Module || len(p.Command) == 0 || p.Command[0] == "":
		return ""
	case t.Runner && s.Runners[p.Runner] != nil && s.Runners[p.Runner].Address != "":
		return ""
	}
	dir, c0 := s.Path(p.Dir), p.Command[0]
	if strings.ContainsRune(c0, '/') {
		return Resolve(dir, c0)
	}
	search, ok := p.Env["PATH"]
	if !ok {
		search = os.Getenv("PATH")
	}
	for _, d := range filepath.SplitList(search) {
		if d == "" {
			d = "."
		}
		cand := filepath.Join(Resolve(dir, d), c0)
		if fi, err := os.Stat(cand); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return cand
		}
	}
	return ""
}

// Stale reports whether a file the spec read (an executable, a files
// entry, an env file) has changed or gone since: a host keeps a parsed
// spec only while it is not.
func (s *Spec) Stale(dg Digester) bool {
	if dg == nil {
		dg = contentdigest.New("")
	}
	defer hold(dg)()
	for path, sum := range s.sources {
		if now, err := dg.Digest(path); err != nil || now != sum {
			return true
		}
	}
	return false
}

// Sources lists the files the spec read, as it named them: each
// executable, files: entry (but those of onChange: none, which are not
// read) and env file. A host keeps the digests of these, and of no
// others, in its cache (docs/state-dir.md, "The digest cache").
func (s *Spec) Sources() []string {
	paths := make([]string, 0, len(s.sources))
	for p := range s.sources {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}

// ExecutablePath is the file plugin name's process runs, as Fields
// digests it; "" when none is digested.
func (s *Spec) ExecutablePath(name string) string {
	if p := s.Plugins[name]; p != nil {
		return s.executable(p)
	}
	return ""
}

// Changed lists the files of plugin name's content (its executable, its
// files: entries, its env files) that no longer hold what s read: a start
// of name from s would run other content than s describes, such as a
// binary rebuilt in place (docs/semantics.md, "Rollback").
func (s *Spec) Changed(name string, dg Digester) []string {
	p := s.Plugins[name]
	if p == nil {
		return nil
	}
	if dg == nil {
		dg = contentdigest.New("")
	}
	defer hold(dg)()
	paths := []string{s.executable(p)}
	for _, f := range p.Files {
		paths = append(paths, s.Path(f.Path))
	}
	for _, f := range p.EnvFile {
		paths = append(paths, s.Path(f))
	}
	var out []string
	for _, path := range paths {
		sum, ok := s.sources[path]
		if !ok || slices.Contains(out, path) {
			continue
		}
		if now, err := dg.Digest(path); err != nil || now != sum {
			out = append(out, path)
		}
	}
	return out
}
