package plan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/spec"
)

// inPlace plans after against the state before left, in one directory
// holding conf and static files.
func inPlace(t *testing.T, dir, before, after string) *Plan {
	t.Helper()
	p, err := Diff(contentSpec(t, dir, after), applied(contentSpec(t, dir, before)))
	require.NoError(t, err)
	return p
}

func TestInPlaceChanges(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "nginx.conf"), "v1")
	writeFile(t, filepath.Join(dir, "static/index.html"), "v1")
	base := `plugins:
  web: {command: [./web], files: [{path: nginx.conf, onChange: reload}, {path: static, onChange: none}], reloadSignal: SIGHUP, retry: {max: 10 seconds}}
  api: {command: [./api], uses: [web]}
`
	// retry: an update in place, which restarts no consumer.
	p := inPlace(t, dir, base, `plugins:
  web: {command: [./web], files: [{path: nginx.conf, onChange: reload}, {path: static, onChange: none}], reloadSignal: SIGHUP, retry: {max: 20 seconds}}
  api: {command: [./api], uses: [web]}
`)
	text := render(t, p)
	assert.Contains(t, text, "1 to update in place, 0 to restart")
	assert.Contains(t, text, "  * update  web  changed retry.max (in place)\n")
	assert.NotContains(t, text, "api")
	assert.Equal(t, []Step{{ID: "update:web", Op: OpUpdate, Plugin: "web", After: []Edge{}}}, p.Steps)

	// A static file with onChange none: nothing.
	writeFile(t, filepath.Join(dir, "static/index.html"), "v2")
	assert.False(t, inPlace(t, dir, base, base).HasChanges())

	// The conf: a reload, no consumer restarted.
	before := contentSpec(t, dir, base)
	writeFile(t, filepath.Join(dir, "nginx.conf"), "v2")
	p, err := Diff(contentSpec(t, dir, base), applied(before))
	require.NoError(t, err)
	assert.Contains(t, render(t, p), "  ⟳ reload  web  changed file nginx.conf\n")
	assert.Equal(t, []Step{{ID: "reload:web", Op: OpReload, Plugin: "web", After: []Edge{}}}, p.Steps)
	assert.Equal(t, 1, p.Summary.Reload)

	// The command too: a replace, naming what forces it.
	p, err = Diff(contentSpec(t, dir, `plugins:
  web: {command: [./web, -v], files: [{path: nginx.conf, onChange: reload}, {path: static, onChange: none}], reloadSignal: SIGHUP, retry: {max: 20 seconds}}
  api: {command: [./api], uses: [web]}
`), applied(before))
	require.NoError(t, err)
	text = render(t, p)
	assert.Contains(t, text, "  ~ replace web  changed command, file nginx.conf, retry.max; forces replacement: command\n")
	assert.Contains(t, text, "  ↻ restart api  web is replaced\n")
}

// TestUsesInPlace: uses only orders starts and stops; a new provider
// starts before the consumer's update without restarting it, unless it is
// floating, whose address the consumer sees.
func TestUsesInPlace(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "shared"), 0o755))
	before := `plugins:
  api: {command: [./api]}
`
	p := inPlace(t, dir, before, `plugins:
  api: {command: [./api], uses: [cache]}
  cache: {command: [./cache]}
`)
	assert.Contains(t, render(t, p), "  * update  api    changed uses (in place)\n")
	assert.Equal(t, []Step{
		{ID: "start:cache", Op: OpStart, Plugin: "cache", After: []Edge{}},
		{ID: "update:api", Op: OpUpdate, Plugin: "api", After: []Edge{{Step: "start:cache"}}},
	}, p.Steps)

	p = inPlace(t, dir, before, `plugins:
  api: {command: [./api], uses: [relay]}
  relay: {run: floating, command: [./relay], elect: {dir: shared, port: 9530}}
`)
	assert.Contains(t, render(t, p), "  ~ replace api    changed uses\n")

	// A provider dropped and removed stops once its consumer no longer
	// uses it.
	p = inPlace(t, dir, `plugins:
  api: {command: [./api], uses: [cache]}
  cache: {command: [./cache]}
`, before)
	assert.Equal(t, []Step{
		{ID: "update:api", Op: OpUpdate, Plugin: "api", After: []Edge{}},
		{ID: "stop:cache", Op: OpStop, Plugin: "cache", After: []Edge{{Step: "update:api"}}},
	}, p.Steps)
}

// TestHealthChange: a local plugin's health checks run in the host, and a
// runner plugin's on its runner, which change them under the running
// process: an update in place; a worker's are set up at its start: a
// replace.
func TestHealthChange(t *testing.T) {
	assert.False(t, inPlaceField("health.interval"), "not for every placement")
	dir := t.TempDir()
	local := func(health string) string {
		return "plugins:\n  db: {command: [./db], health: " + health + "}\n  api: {command: [./api], uses: [db]}\n"
	}
	for _, c := range []struct{ before, after string }{
		{"{tcp: 127.0.0.1:5432}", "{tcp: 127.0.0.1:5432, interval: 30 seconds}"},
		{"{tcp: 127.0.0.1:5432}", "{exec: [pg_isready]}"},
	} {
		p := inPlace(t, dir, local(c.before), local(c.after))
		assert.Equal(t, []Step{{ID: "update:db", Op: OpUpdate, Plugin: "db", After: []Edge{}}}, p.Steps, c.after)
		assert.NotContains(t, render(t, p), "api", "no consumer restarts")
	}
	remote := func(health string) string {
		return "runners: {edge: {address: tcp://127.0.0.1:7070, tokenFile: token}}\nplugins:\n  db: {run: runner, runner: edge, command: [./db], health: " + health + "}\n"
	}
	writeFile(t, filepath.Join(dir, "token"), "t")
	p := inPlace(t, dir, remote("{tcp: 127.0.0.1:5432}"), remote("{tcp: 127.0.0.1:5432, interval: 30 seconds}"))
	assert.Equal(t, []Step{{ID: "update:db", Op: OpUpdate, Plugin: "db", After: []Edge{}}}, p.Steps, "a runner's")
	worker := func(health string) string {
		return "plugins:\n  db: {run: worker, module: m.wasm, health: " + health + "}\n"
	}
	writeFile(t, filepath.Join(dir, "m.wasm"), "\x00asm")
	p = inPlace(t, dir, worker("{tcp: 127.0.0.1:5432}"), worker("{tcp: 127.0.0.1:5432, interval: 30 seconds}"))
	assert.Contains(t, render(t, p), "~ replace db  changed health.interval\n")
}

// TestFilesTrackingInPlace: what graft tracks of a plugin's files, and
// what a change of each does, is graft's alone: a change of a file's
// onChange, a file newly listed or no longer listed, updates the plugin in
// place; a change of a tracked file's content still does what its
// onChange says.
func TestFilesTrackingInPlace(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "nginx.conf"), "v1")
	writeFile(t, filepath.Join(dir, "mime.types"), "v1")
	spec := func(files string) string {
		return "plugins:\n  web: {command: [./web], reloadSignal: SIGHUP, files: [" + files + "]}\n  api: {command: [./api], uses: [web]}\n"
	}
	for _, c := range []struct{ why, before, after string }{
		{"onChange replace to reload", "nginx.conf", "{path: nginx.conf, onChange: reload}"},
		{"onChange reload to replace", "{path: nginx.conf, onChange: reload}", "nginx.conf"},
		{"onChange replace to none", "nginx.conf", "{path: nginx.conf, onChange: none}"},
		{"onChange none to replace", "{path: nginx.conf, onChange: none}", "nginx.conf"},
		{"a file newly listed", "nginx.conf", "nginx.conf, mime.types"},
		{"a file no longer listed", "nginx.conf, mime.types", "nginx.conf"},
	} {
		p := inPlace(t, dir, spec(c.before), spec(c.after))
		assert.Equal(t, []Step{{ID: "update:web", Op: OpUpdate, Plugin: "web", After: []Edge{}}}, p.Steps, c.why)
		assert.Contains(t, render(t, p), "(in place)", c.why)
	}

	// The content of a tracked file, with onChange replace: a replace.
	before := contentSpec(t, dir, spec("nginx.conf"))
	writeFile(t, filepath.Join(dir, "nginx.conf"), "v2")
	p, err := Diff(contentSpec(t, dir, spec("{path: nginx.conf, onChange: none}, mime.types")), applied(before))
	require.NoError(t, err)
	assert.Equal(t, 0, p.Summary.Replace, "untracked now: its change is not the plugin's")
	p, err = Diff(contentSpec(t, dir, spec("nginx.conf, mime.types")), applied(before))
	require.NoError(t, err)
	assert.Contains(t, render(t, p), "forces replacement: file nginx.conf\n")
}

// TestUnconfirmedReload: a reload that was signalled and did not prove
// it took leaves a record that neither the old spec nor the new one
// matches: the next plan reloads whichever the file then holds.
func TestUnconfirmedReload(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "nginx.conf"), "v1")
	const src = "plugins:\n  web: {command: [./web], reloadSignal: SIGHUP, files: [{path: nginx.conf, onChange: reload}]}\n"
	v1 := contentSpec(t, dir, src)
	writeFile(t, filepath.Join(dir, "nginx.conf"), "v2")
	v2 := contentSpec(t, dir, src)
	r := UnconfirmedReload(Applied(v1, "web"), Applied(v2, "web"))
	assert.Equal(t, UnconfirmedDigest, r.Fields[spec.FileField("nginx.conf")])
	assert.Equal(t, Applied(v1, "web").Fields["command"], r.Fields["command"], "what did not change stays")
	state := &State{Plugins: []Record{r}}
	state.Plugins[0].Status = Running
	for name, s := range map[string]*spec.Spec{"the old file": v1, "the new file": v2} {
		p, err := Diff(s, state)
		require.NoError(t, err)
		assert.Equal(t, 1, p.Summary.Reload, name)
	}
}
