package spec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/graftland/graft/launch"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/contentdigest"
)

// tree writes files under a new directory and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		write(t, filepath.Join(dir, name), data)
	}
	return dir
}

func write(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o755))
}

func parseAt(t *testing.T, dir, yaml string) (*Spec, error) {
	t.Helper()
	return ParseWith(filepath.Join(dir, "plugins.yaml"), dir, []byte(yaml), Options{Lookup: VarsLookup(nil)})
}

const contentSpec = `
name: shop
plugins:
  api:
    command: [bin/api]
    files: [conf/api.conf, {path: static/, onChange: none}, {path: conf/reload.conf, onChange: reload}]
    reloadSignal: SIGHUP
`

// TestContentFields: the executable and the files' contents are fields;
// a rebuilt binary at the same path changes "executable" only; a file
// with onChange none is not digested at all.
func TestContentFields(t *testing.T) {
	dir := tree(t, map[string]string{"bin/api": "v1", "conf/api.conf": "a", "conf/reload.conf": "r", "static/index.html": "hi"})
	s1, err := parseAt(t, dir, contentSpec)
	require.NoError(t, err)
	f1 := s1.Fields("api")
	assert.Contains(t, f1, "executable")
	assert.Contains(t, f1, "files[conf/api.conf]")
	assert.Contains(t, f1, "files[conf/reload.conf]")
	assert.NotContains(t, f1, "files[static/]", "onChange: none is not digested")
	assert.Equal(t, []File{{"conf/api.conf", OnChangeReplace}, {"static/", OnChangeNone}, {"conf/reload.conf", OnChangeReload}}, s1.Plugins["api"].Files)
	assert.Equal(t, filepath.Join(dir, "bin/api"), s1.ExecutablePath("api"))

	write(t, filepath.Join(dir, "bin/api"), "v2")
	write(t, filepath.Join(dir, "static/index.html"), "changed")
	s2, err := parseAt(t, dir, contentSpec)
	require.NoError(t, err)
	assert.Equal(t, []string{"executable"}, changed(s1, s2, "api"))
	assert.True(t, s1.Stale(nil), "the first spec's binary changed")
	assert.False(t, s2.Stale(nil))

	write(t, filepath.Join(dir, "conf/reload.conf"), "r2")
	s3, err := parseAt(t, dir, contentSpec)
	require.NoError(t, err)
	assert.Equal(t, []string{"files[conf/reload.conf]"}, changed(s2, s3, "api"))
}

// changed lists the fields of plugin name that differ from a to b.
func changed(a, b *Spec, name string) []string {
	fa, fb := FieldDigests(a.WithKey(DigestKey{1}).Fields(name)), FieldDigests(b.WithKey(DigestKey{1}).Fields(name))
	var out []string
	for k, v := range fb {
		if fa[k] != v {
			out = append(out, k)
		}
	}
	for k := range fa {
		if _, ok := fb[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// TestExecutableOnPath: a command without a slash is digested as found
// on the PATH of its env, as its start finds it; one found nowhere is not
// digested, and not an error (its start says why).
func TestExecutableOnPath(t *testing.T) {
	dir := tree(t, map[string]string{"tools/web": "#!/bin/sh\n", "tools/plain": "not executable"})
	require.NoError(t, os.Chmod(filepath.Join(dir, "tools/plain"), 0o644))
	s, err := parseAt(t, dir, `
plugins:
  web: {command: [web], env: {PATH: tools}}
  plain: {command: [plain], env: {PATH: tools}}
  ghost: {command: [./no-such-binary]}
`)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "tools/web"), s.ExecutablePath("web"))
	assert.Contains(t, s.Fields("web"), "executable")
	assert.NotContains(t, s.Fields("plain"), "executable", "not executable: not what a start runs")
	assert.NotContains(t, s.Fields("ghost"), "executable")
}

// TestMissingFiles: a files entry or an env file that is not there is an
// error at its position, naming it.
func TestMissingFiles(t *testing.T) {
	dir := tree(t, map[string]string{"bin/api": "x"})
	_, err := parseAt(t, dir, `plugins:
  api:
    command: [bin/api]
    files:
      - conf/gone.conf
      - {path: static/, onChange: none}
    envFile: [.env]
`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plugins.yaml:5:9: plugins.api.files[0]: conf/gone.conf: no such file or directory")
	assert.Contains(t, err.Error(), "plugins.yaml:6:9: plugins.api.files[1]: static/: no such file or directory")
	assert.Contains(t, err.Error(), "plugins.yaml:7:15: plugins.api.envFile[0]: .env: no such file or directory")
}

func TestFilesValues(t *testing.T) {
	dir := tree(t, map[string]string{"a": "x", "m.wasm": "x"})
	_, err := parseAt(t, dir, `plugins:
  api:
    command: [x]
    files: [{path: a, onChange: sometimes}, {onChange: none}]
  w:
    run: worker
    module: m.wasm
    files: [{path: a, onChange: reload}]
`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `plugins.api.files[0].onChange: unknown onChange "sometimes"; want replace, reload or none`)
	assert.Contains(t, err.Error(), `plugins.api.files[1]: empty path`)
	assert.Contains(t, err.Error(), `plugins.w.files[0].onChange: a worker cannot reload`)
}

// TestEnvFiles: later env files override earlier ones and env overrides
// them all; an env value is in Fields only as an HMAC; a bad line is
// reported as file:line at the entry that names the file.
func TestEnvFiles(t *testing.T) {
	dir := tree(t, map[string]string{
		".env":            "A=from-dotenv\nB=from-dotenv\nC=from-dotenv\n",
		"secrets/api.env": "B=from-secrets\nTOKEN=hunter2\n",
		"bad.env":         "OK=1\n\nnot a line\n",
	})
	s, err := parseAt(t, dir, `plugins:
  api:
    command: [x]
    envFile: [.env, secrets/api.env]
    env: {C: from-yaml}
`)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"A": "from-dotenv", "B": "from-secrets", "C": "from-yaml", "TOKEN": "hunter2"}, s.Plugins["api"].Env)
	for k, v := range s.Fields("api") {
		assert.NotContains(t, v, "hunter2", k)
	}
	assert.Contains(t, s.Fields("api"), "env.TOKEN")

	write(t, filepath.Join(dir, "secrets/api.env"), "B=from-secrets\nTOKEN=correct-horse\n")
	s2, err := parseAt(t, dir, string(s.Text))
	require.NoError(t, err)
	assert.Equal(t, []string{"env.TOKEN"}, changed(s, s2, "api"), "the changed key is named")
	assert.True(t, s.Stale(nil))

	_, err = parseAt(t, dir, "plugins:\n  api:\n    command: [x]\n    envFile: [bad.env]\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plugins.yaml:4:15: plugins.api.envFile[0]: bad.env:3: want KEY=value")
}

// TestDigestCacheShared: many plugins sharing one binary read it once.
func TestDigestCacheShared(t *testing.T) {
	dir := tree(t, map[string]string{"bin/api": "big binary"})
	yaml := "plugins:\n"
	for i := range 200 {
		yaml += "  p" + itoa3(i) + ": {command: [bin/api]}\n"
	}
	c := contentdigest.New(t.TempDir())
	_, err := ParseWith(filepath.Join(dir, "plugins.yaml"), dir, []byte(yaml), Options{Digests: c})
	require.NoError(t, err)
	assert.Equal(t, 1, c.Reads())
}

func itoa3(i int) string {
	return string([]byte{'0' + byte(i/100), '0' + byte(i/10%10), '0' + byte(i%10)})
}

// TestModuleDigest: a worker's module is its executable.
func TestModuleDigest(t *testing.T) {
	dir := tree(t, map[string]string{"wasm/app.wasm": "\x00asm v1"})
	yaml := "plugins:\n  app: {run: worker, module: wasm/app.wasm}\n"
	a, err := parseAt(t, dir, yaml)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "wasm/app.wasm"), a.ExecutablePath("app"))
	write(t, filepath.Join(dir, "wasm/app.wasm"), "\x00asm v2")
	b, err := parseAt(t, dir, yaml)
	require.NoError(t, err)
	assert.Equal(t, []string{"executable"}, changed(a, b, "app"))
}

// TestReloadRules: a file with onChange: reload needs a reload of the
// plugin's own; reload takes a signal or a command, and a check; each
// problem is at its position.
func TestReloadRules(t *testing.T) {
	dir := t.TempDir()
	_, err := parseAt(t, dir, `plugins:
  a:
    command: [x]
    files: [{path: a.conf, onChange: reload}]
  b:
    command: [x]
    reload: {signal: SIGHUP, command: [x, reload]}
  c:
    command: [x]
    reload: {}
  d:
    command: [x]
    reload: {signal: sighup, check: []}
  e:
    command: [x]
    reload: {signal: SIGHUP}
    reloadSignal: SIGUSR2
  w:
    run: worker
    module: m.wasm
    reload: {signal: SIGHUP}
`)
	require.Error(t, err)
	for _, want := range []string{
		`plugins.yaml:4:38: plugins.a.files[0].onChange: the plugin declares no reload: add reloadSignal: SIGHUP`,
		`plugins.yaml:7:5: plugins.b.reload: give signal or command, not both`,
		`plugins.yaml:10:5: plugins.c.reload: want signal (such as SIGHUP) or command (such as [caddy, reload])`,
		`plugins.yaml:13:22: plugins.d.reload.signal: unknown signal "sighup"`, `; did you mean "SIGHUP"?`,
		`plugins.yaml:13:30: plugins.d.reload.check: want a command, such as [nginx, -t]`,
		`plugins.yaml:17:19: plugins.e.reloadSignal: reloadSignal is the short form of reload: {signal: ...}; give one of them`,
		`plugins.yaml:21:5: plugins.w.reload: a worker cannot reload`,
	} {
		assert.Contains(t, err.Error(), want)
	}

	s, err := parseAt(t, dir, `plugins:
  short: {command: [x], reloadSignal: SIGUSR2}
  long: {command: [x], reload: {command: [x, reload], check: [x, -t]}}
`)
	require.NoError(t, err)
	assert.Equal(t, &launch.Reload{Signal: "SIGUSR2"}, s.Plugins["short"].Launch().Reload, "reloadSignal is reload's short form")
	assert.Equal(t, &launch.Reload{Command: []string{"x", "reload"}, Check: []string{"x", "-t"}}, s.Plugins["long"].Launch().Reload)
}

// TestStopModeRules: stopMode is group or main, at its position, with a
// did-you-mean; a worker has none; it reaches the launch spec.
func TestStopModeRules(t *testing.T) {
	dir := t.TempDir()
	_, err := parseAt(t, dir, `plugins:
  a: {command: [x], stopMode: Main}
  w: {run: worker, module: m.wasm, stopMode: main}
`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `plugins.yaml:2:31: plugins.a.stopMode: unknown stopMode "Main"; want group or main; did you mean "main"?`)
	assert.Contains(t, err.Error(), `plugins.yaml:3:46: plugins.w.stopMode: a worker gets no signal`)
	s, err := parseAt(t, dir, "plugins:\n  a: {command: [x], stopMode: main}\n")
	require.NoError(t, err)
	assert.Equal(t, launch.StopMain, s.Plugins["a"].Launch().StopMode)
}
