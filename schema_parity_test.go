package graft_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/rogpeppe/go-internal/txtar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/graftland/graft/spec"
)

// loaderOnly is every bad fixture of spec/testdata/errors whose problem
// only the loader can see, with the reason: the schema rejects every
// other. A rule the schema learns to express leaves the table (the test
// fails while the entry stays).
var loaderOnly = map[string]string{
	"duration-out-of-range":              "a pattern cannot bound a duration's value",
	"schema-duration-overflow":           "a pattern cannot bound a duration's value",
	"schema-duration-rounds-to-zero":     "a pattern sees the digits, not the value they round to",
	"elect-etcd-session-ttl-stop-budget": "the ttl rule compares fields: the session's TTL against 2 × renew plus the stop budget",
	"elect-renew-stop-budget":            "the ttl rule compares fields: the default ttl against 2 × renew plus the stop budget",
	"elect-renew-ttl":                    "the ttl rule compares fields: renew against ttl",
	"elect-ttl-stop-budget":              "the ttl rule compares fields: ttl against 2 × renew plus the stop budget",
	"schema-elect-poll-not-shorter":      "it compares fields: poll against ttl",
	"inherit-env-and-env":                "it compares the keys of env with the items of inheritEnv",
	"ready-bad-log":                      "whether a string is an RE2 regular expression",
	"repeated-key":                       "YAML parsers for the schema refuse a key given twice outright: there is no instance",
	"syntax-error":                       "not YAML: there is no instance",
	"two-documents":                      "two YAML documents: there is no one instance",
	"runner-plaintext":                   "insecurePlaintext depends on the form of the runner's address, a tcp:// one, and on tls",
	"schema-undeclared-runner-typo":      "a reference: runner names an entry of runners",
	"undeclared-runner":                  "a reference: runner names an entry of runners",
	"unknown-uses":                       "a reference: uses names an entry of plugins",
	"unknown-uses-suggestion":            "a reference: uses names an entry of plugins",
	"uses-self":                          "a reference: uses names another entry of plugins",
	"uses-cycle":                         "references: a cycle through uses",
	"schema-uses-cycle-three":            "references: a cycle through uses",
	"uses-completed-not-once":            "a reference: until: completed needs a provider with once",
	"uses-healthy-no-health":             "a reference: until: healthy needs a provider with health",
	"user-unknown":                       "the machine's user database",
}

// TestSchemaRejectsBad: every bad fixture the loader rejects is rejected
// by the schema too, or is in loaderOnly; and every entry of loaderOnly
// is a fixture the schema accepts, or one with no instance to check.
func TestSchemaRejectsBad(t *testing.T) {
	sch := compile(t)

	files, err := filepath.Glob(filepath.Join("spec", "testdata", "errors", "*.txtar"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no spec/testdata/errors/*.txtar")
	seen := map[string]bool{}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			require.NoError(t, err)
			i := slices.IndexFunc(ar.Files, func(f txtar.File) bool { return f.Name == "plugins.yaml" })
			require.True(t, i >= 0, "no plugins.yaml section")
			data := ar.Files[i].Data

			_, err = spec.Parse("plugins.yaml", data)
			assert.Error(t, err, "the loader accepts it")

			inst, ierr := instance(data)
			why, only := loaderOnly[name]
			switch {
			case only && ierr != nil: // no instance: the schema sees nothing
			case only:
				assert.NoError(t, sch.Validate(inst), "loaderOnly says the schema cannot see it (%s), but it rejects it: take it out of the table", why)
			default:
				require.NoError(t, ierr, "not one YAML document, so the schema has nothing to check: list it in loaderOnly")
				assert.Error(t, sch.Validate(inst), "the schema accepts it: make the schema see it, or list it in loaderOnly with the reason")
			}
		})
	}
	for name := range loaderOnly {
		assert.True(t, seen[name], "loaderOnly names %s, which is no fixture of spec/testdata/errors", name)
	}
}

// TestSchemaMessages: every pattern of schema.json comes with words an
// editor shows instead of it (errorMessage, as ajv-errors and
// yaml-language-server read it) and a description, on its object or one
// that holds it; and no description or message holds an invisible
// character, which an editor would show as nothing.
func TestSchemaMessages(t *testing.T) {
	var walk func(v any, path string, message, described bool)
	walk = func(v any, path string, message, described bool) {
		switch v := v.(type) {
		case map[string]any:
			_, m := v["errorMessage"]
			_, d := v["description"]
			message, described = message || m, described || d
			if _, ok := v["pattern"]; ok {
				assert.True(t, message, "%s has a pattern and no errorMessage", path)
				assert.True(t, described, "%s has a pattern and no description", path)
			}
			for _, k := range []string{"errorMessage", "description"} {
				if text, ok := v[k].(string); ok {
					for _, r := range text {
						invisible := unicode.Is(unicode.Cf, r) || unicode.IsControl(r) || (unicode.IsSpace(r) && r != ' ')
						assert.False(t, invisible, "%s.%s holds U+%04X, which an editor shows as nothing", path, k, r)
					}
				}
			}
			for k, c := range v {
				walk(c, path+"/"+k, message, described)
			}
		case []any:
			for i, c := range v {
				walk(c, fmt.Sprintf("%s/%d", path, i), message, described)
			}
		}
	}
	walk(schemaDoc(t), "", false, false)
}

// fullFile is a plugins file that uses every field the loader knows, a
// value for each, by its path: in one of a few plugins and runners, since
// some fields exclude others (a worker's module and a command). A field
// added to spec's types without a value here fails TestSchemaFullFile.
var fullFile = map[string]any{
	"name": "shop",

	"runners.edge.address":            "tcp://10.0.0.5:7070",
	"runners.edge.tokenFile":          "token",
	"runners.edge.tls.ca":             "ca.pem",
	"runners.edge.tls.cert":           "client.pem",
	"runners.edge.tls.key":            "client.key",
	"runners.edge.tls.serverName":     "runner.internal",
	"runners.edge.connect.lease":      "20 seconds",
	"runners.edge.connect.margin":     "2 seconds",
	"runners.plain.address":           "tcp://10.0.0.6:7070",
	"runners.plain.tokenFile":         "token",
	"runners.plain.insecurePlaintext": true,

	"plugins.api.run":                "local",
	"plugins.api.command":            []any{"./bin/api", "--listen", ":8080"},
	"plugins.api.env":                map[string]any{"PORT": "8080"},
	"plugins.api.inheritEnv":         []any{"HOME"},
	"plugins.api.dir":                ".",
	"plugins.api.tty":                true,
	"plugins.api.user":               "root",
	"plugins.api.group":              "root",
	"plugins.api.umask":              "027",
	"plugins.api.limits.nofile.soft": 512,
	"plugins.api.limits.nofile.hard": 1024,
	"plugins.api.uses":               []any{"db", map[string]any{"plugin": "migrate", "until": "completed"}},
	"plugins.api.stopSignal":         "SIGINT",
	"plugins.api.stopMode":           "main",
	"plugins.api.ready.log":          "listening",
	"plugins.api.ready.http":         "http://127.0.0.1:8080/ready",
	"plugins.api.ready.timeout":      "20 seconds",
	"plugins.api.health.grpc":        "127.0.0.1:9090",
	"plugins.api.health.service":     "shop.API",
	"plugins.api.health.interval":    "5 seconds",
	"plugins.api.health.timeout":     "2 seconds",
	"plugins.api.health.failures":    3,
	"plugins.api.health.startPeriod": "10 seconds",
	"plugins.api.retry.delay":        "1 second",
	"plugins.api.retry.factor":       2,
	"plugins.api.retry.max":          "30 seconds",
	"plugins.api.retry.attempts":     5,
	"plugins.api.files.path":         "api.conf",
	"plugins.api.files.onChange":     "reload",
	"plugins.api.envFile":            []any{"api.env"},
	"plugins.api.reload.signal":      "SIGHUP",
	"plugins.api.reload.check":       []any{"./bin/api", "--check"},
	"plugins.api.listen.name":        "http",
	"plugins.api.listen.tcp":         "127.0.0.1:8080",
	"plugins.api.update.order":       "start-first",
	"plugins.api.update.parallel":    2,
	"plugins.api.replicas":           3,
	"plugins.db.update.overlap":      true,
	"plugins.db.update.onFailure":    "rollback",
	"plugins.db.update.deadline":     "2 minutes",

	"plugins.db.command":           []any{"./bin/db"},
	"plugins.db.ready.tcp":         "127.0.0.1:5432",
	"plugins.db.health.exec":       []any{"./bin/db", "--ping"},
	"plugins.db.reloadSignal":      "SIGHUP",
	"plugins.db.listen.name":       "admin",
	"plugins.db.listen.unix":       "run/admin.sock",
	"plugins.db.listen.mode":       "0660",
	"plugins.cache.command":        []any{"./bin/db"},
	"plugins.cache.ready.exec":     []any{"./bin/db", "--ready"},
	"plugins.cache.health.tcp":     "127.0.0.1:6379",
	"plugins.cache.reload.command": []any{"./bin/db", "--reload"},
	"plugins.web.command":          []any{"./bin/db"},
	"plugins.web.ready.grpc":       "127.0.0.1:9091",
	"plugins.web.ready.service":    "shop.Web",
	"plugins.web.health.http":      "http://127.0.0.1:8081/health",
	"plugins.migrate.command":      []any{"./bin/db", "--migrate"},
	"plugins.migrate.once.timeout": "10 minutes",

	"plugins.thumbs.run":             "worker",
	"plugins.thumbs.module":          "thumbs.wasm",
	"plugins.thumbs.args":            []any{"--quality", "85"},
	"plugins.thumbs.mounts.host":     "media",
	"plugins.thumbs.mounts.guest":    "/media",
	"plugins.thumbs.mounts.writable": true,
	"plugins.thumbs.memory":          "64 MiB",

	"plugins.writer.run":      "runner",
	"plugins.writer.command":  []any{"/opt/writer"},
	"plugins.writer.runner":   "edge",
	"plugins.writer.instance": "shop.writer",

	"plugins.relay.run":                 "floating",
	"plugins.relay.command":             []any{"./bin/db", "--relay"},
	"plugins.relay.elect.dir":           "shared",
	"plugins.relay.elect.port":          9530,
	"plugins.relay.elect.address":       "127.0.0.0/8",
	"plugins.relay.elect.ttl":           "15 seconds",
	"plugins.relay.elect.renew":         "3 seconds",
	"plugins.relay.elect.poll":          "1 second",
	"plugins.relay.elect.lockStale":     "30 seconds",
	"plugins.relay.elect.probe":         true,
	"plugins.relay.elect.probeFailures": 3,
	"plugins.relay.elect.startFailures": 5,

	"plugins.bus.run":                     "floating",
	"plugins.bus.command":                 []any{"./bin/db", "--bus"},
	"plugins.bus.elect.address":           "127.0.0.1:9540",
	"plugins.bus.elect.etcd.endpoints":    []any{"https://10.0.0.7:2379"},
	"plugins.bus.elect.etcd.prefix":       "/graft/shop",
	"plugins.bus.elect.etcd.sessionTTL":   "20 seconds",
	"plugins.bus.elect.etcd.tls.ca":       "ca.pem",
	"plugins.bus.elect.etcd.tls.cert":     "client.pem",
	"plugins.bus.elect.etcd.tls.key":      "client.key",
	"plugins.bus.elect.etcd.username":     "graft",
	"plugins.bus.elect.etcd.passwordFile": "token",
}

// yamlPaths are the paths of every field of t and of the types it holds,
// as plugins.yaml writes them, with "*" for the key of a map of structs:
// "plugins.*.ready.tcp"; a list of structs' fields follow the list's.
func yamlPaths(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case strings.Contains(opts, "inline"):
			out = append(out, yamlPaths(f.Type, prefix)...)
			continue
		case name == "":
			continue
		}
		path := prefix + name
		out = append(out, path)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Map && ft.Elem().Kind() != reflect.String:
			out = append(out, yamlPaths(ft.Elem(), path+".*.")...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, yamlPaths(ft.Elem(), path+".")...)
		case ft.Kind() == reflect.Struct:
			out = append(out, yamlPaths(ft, path+".")...)
		}
	}
	return out
}

// TestSchemaFullFile: every field of spec's types, found by reflection,
// has a value in fullFile; and that file is one the loader and the
// schema both accept.
func TestSchemaFullFile(t *testing.T) {
	covered := map[string]bool{}
	for path := range fullFile {
		parts := strings.Split(path, ".")
		if parts[0] == "plugins" || parts[0] == "runners" {
			parts[1] = "*" // the name of a plugin or runner
		}
		if len(parts) > 3 && parts[2] == "limits" {
			parts[3] = "*" // the name of a limit
		}
		for i := range parts {
			covered[strings.Join(parts[:i+1], ".")] = true
		}
	}
	paths := yamlPaths(reflect.TypeFor[spec.Spec](), "")
	require.Contains(t, paths, "plugins.*.ready.tcp", "yamlPaths walks the plugins and their checks")
	for _, path := range paths {
		assert.True(t, covered[path], "%s is a field the loader knows, and fullFile gives it no value", path)
	}

	// The file: fullFile's values at their paths, a files or mounts
	// entry being a list of one.
	doc := map[string]any{}
	for path, v := range fullFile {
		parts := strings.Split(path, ".")
		m := doc
		for i, p := range parts[:len(parts)-1] {
			if i == 2 && (p == "files" || p == "mounts" || p == "listen") {
				list, _ := m[p].([]any)
				if len(list) == 0 {
					list = []any{map[string]any{}}
					m[p] = list
				}
				m = list[0].(map[string]any)
				continue
			}
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = v
	}
	data, err := yaml.Marshal(doc)
	require.NoError(t, err)
	dir := t.TempDir()
	for f, content := range map[string]string{
		"bin/api": "x", "bin/db": "x", "api.conf": "x", "token": "x", "api.env": "LEVEL=info\n",
		"thumbs.wasm": "\x00asm\x01\x00\x00\x00", "media/.keep": "", "shared/.keep": "",
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(content), 0o755))
	}
	file := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(file, data, 0o644))

	_, err = spec.Load(file)
	require.NoError(t, err, "the loader refuses the full file:\n%s", data)
	inst, err := instance(data)
	require.NoError(t, err)
	assert.NoError(t, compile(t).Validate(inst), "the schema refuses the full file:\n%s", data)
}

// anyDigest digests every file alike, whether it is there or not: a
// fixture's files are its script's to make.
type anyDigest struct{}

func (anyDigest) Digest(string) (string, error) { return "sha256:" + strings.Repeat("0", 64), nil }

// scriptVar is a script's $NAME in a fixture, which the script replaces
// before graft reads the file (envsubst).
var scriptVar = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)

// TestSchemaAcceptsFixtures: every plugins file among the end-to-end
// scripts' fixtures (cmd/graft/testdata) that the loader accepts, with
// the scripts' variables given plausible values, the schema accepts too.
func TestSchemaAcceptsFixtures(t *testing.T) {
	sch := compile(t)
	scripts, err := filepath.Glob(filepath.Join("cmd", "graft", "testdata", "*", "*.txtar"))
	require.NoError(t, err)
	require.NotEmpty(t, scripts)
	checked := 0
	for _, script := range scripts {
		ar, err := txtar.ParseFile(script)
		require.NoError(t, err)
		for _, f := range ar.Files {
			if !strings.HasSuffix(f.Name, ".yaml") && !strings.HasSuffix(f.Name, ".yml") {
				continue
			}
			data := scriptVar.ReplaceAllFunc(f.Data, func(v []byte) []byte {
				switch name := string(v[1:]); {
				case strings.Contains(name, "PORT"):
					return []byte("7070")
				case name == "WORK":
					return []byte("/work")
				default:
					return []byte("x")
				}
			})
			inst, err := instance(data)
			if m, ok := inst.(map[string]any); err != nil || !ok || m["plugins"] == nil {
				continue // not a plugins file
			}
			dir := t.TempDir()
			lookup := func(name string) (string, bool) {
				if strings.Contains(name, "PORT") {
					return "7070", true
				}
				return "x", true
			}
			if _, err := spec.ParseWith(filepath.Join(dir, "plugins.yaml"), dir, data, spec.Options{Lookup: lookup, Digests: anyDigest{}}); err != nil {
				continue // a fixture of a refusal, or one whose files its script makes
			}
			checked++
			assert.NoError(t, sch.Validate(inst), "%s: %s: the loader accepts it, the schema does not", script, f.Name)
		}
	}
	assert.Greater(t, checked, 50, "plugins files checked")
	t.Logf("%d plugins files of the scripts checked", checked)
}
