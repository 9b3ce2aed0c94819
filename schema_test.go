package graft_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"gopkg.in/yaml.v3"

	"github.com/graftland/graft"
	"github.com/graftland/graft/internal/testprog"
	"github.com/graftland/graft/spec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// schemaURL is the $id of schema.json.
const schemaURL = "https://github.com/graftland/graft/schema.json"

// schemaDoc returns schema.json decoded as jsonschema decodes documents.
func schemaDoc(t *testing.T) map[string]any {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(graft.Schema))
	require.NoError(t, err, "schema.json is not JSON")
	m, ok := doc.(map[string]any)
	require.True(t, ok, "schema.json is not an object")
	return m
}

// compile compiles schema.json. The compiler checks it against its
// metaschema (2020-12) first, and compiles its patterns with Go's regexp,
// as the RE2 engine the schema is written for.
func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	require.NoError(t, c.AddResource(schemaURL, schemaDoc(t)))
	sch, err := c.Compile(schemaURL)
	require.NoError(t, err)
	return sch
}

// instance turns a plugins file into the JSON value that editors check
// against the schema. An empty file is null. A file that is not one YAML
// document has no instance: that is an error.
func instance(data []byte) (any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra any
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, errors.New("more than one YAML document")
	case !errors.Is(err, io.EOF):
		return nil, err
	}
	b, err := json.Marshal(stringKeys(v))
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// stringKeys turns the map[any]any that yaml.v3 makes for a mapping with a
// key that is not a string (a plugin named 2024) into map[string]any, as the
// key's text is the name.
func stringKeys(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = stringKeys(x)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = stringKeys(x)
		}
		return m
	case []any:
		for i, x := range v {
			v[i] = stringKeys(x)
		}
		return v
	}
	return v
}

func TestSchemaIsValid(t *testing.T) {
	doc := schemaDoc(t)

	c := jsonschema.NewCompiler()
	meta, err := c.Compile("https://json-schema.org/draft/2020-12/schema")
	require.NoError(t, err)
	require.NoError(t, meta.Validate(doc), "schema.json against the 2020-12 metaschema")
	assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"])
	assert.Equal(t, schemaURL, doc["$id"])
	assert.NotEmpty(t, doc["title"])
	assert.NotEmpty(t, doc["description"])

	compile(t)

	for _, p := range checkSchema(doc, "#", false) {
		t.Error(p)
	}
}

// applicators hold subschemas that only constrain: their properties are the
// conditions of a placement rule (run: worker, command: false), not fields
// an editor shows, so they need no description.
var applicators = []string{"if", "then", "else", "not", "allOf", "anyOf", "oneOf"}

// checkSchema walks a schema and returns what an editor would miss: a
// property or $defs entry without a description, or an object that does not
// reject unknown keys as the loader does.
func checkSchema(v any, ptr string, constraint bool) []string {
	var problems []string
	switch v := v.(type) {
	case []any:
		for i, x := range v {
			problems = append(problems, checkSchema(x, fmt.Sprintf("%s/%d", ptr, i), constraint)...)
		}
	case map[string]any:
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range v {
				if !yield(k) {
					return
				}
			}
		}) {
			x, at := v[k], ptr+"/"+k
			switch {
			case k == "examples" || k == "default" || k == "enum" || k == "const":
				// Values, not schemas.
			case k == "properties" || k == "$defs":
				props, _ := x.(map[string]any)
				for name, sub := range props {
					if constraint {
						continue
					}
					if d, _ := sub.(map[string]any)["description"].(string); strings.TrimSpace(d) == "" {
						problems = append(problems, fmt.Sprintf("%s/%s: no description", at, name))
					}
				}
				if k == "properties" && !constraint && v["additionalProperties"] != false {
					problems = append(problems, fmt.Sprintf("%s: properties without additionalProperties: false", ptr))
				}
				problems = append(problems, checkSchema(x, at, constraint)...)
			case slices.Contains(applicators, k):
				problems = append(problems, checkSchema(x, at, true)...)
			default:
				problems = append(problems, checkSchema(x, at, constraint)...)
			}
		}
	}
	return problems
}

func TestSchemaAcceptsValid(t *testing.T) {
	sch := compile(t)

	var files []string
	if _, err := os.Stat("examples"); err == nil {
		err := filepath.WalkDir("examples", func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == "plugins.yaml" {
				files = append(files, path)
			}
			return err
		})
		require.NoError(t, err)
	}
	valid, err := filepath.Glob(filepath.Join("spec", "testdata", "valid", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, valid, "no spec/testdata/valid/*.yaml")
	files = append(files, valid...)

	for _, file := range files {
		t.Run(filepath.ToSlash(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			inst, err := instance(data)
			require.NoError(t, err)
			assert.NoError(t, sch.Validate(inst), "schema")
			_, err = spec.Load(file)
			if m := unknownUser.FindStringSubmatch(fmt.Sprint(err)); m != nil {
				if pkg, ok := recipeUsers[m[1]]; ok {
					testprog.Unavailable(t, fmt.Sprintf("%s: user %s is not on this machine: apt-get install %s, which makes it", file, m[1], pkg))
				}
			}
			assert.NoError(t, err, "loader")
		})
	}
}

// unknownUser is the loader's complaint of a user this machine lacks.
var unknownUser = regexp.MustCompile(`unknown user "([^"]+)": not in the user database`)

// recipeUsers are the users of examples/recipes, each made by the Debian
// package of its daemon.
var recipeUsers = map[string]string{
	"caddy":      "caddy",
	"etcd":       "etcd-server",
	"haproxy":    "haproxy",
	"memcache":   "memcached",
	"mosquitto":  "mosquitto",
	"postgres":   "postgresql",
	"prometheus": "prometheus",
	"redis":      "redis-server",
}

// TestSchemaDuration checks the duration pattern against the loader's
// parser: the same spaces between number and unit (JavaScript's \s, spelled
// out so RE2 and ECMA-262 read it alike), and a match for exactly the
// positive values, apart from what a pattern cannot know.
func TestSchemaDuration(t *testing.T) {
	defs := schemaDoc(t)["$defs"].(map[string]any)
	re := regexp.MustCompile(defs["duration"].(map[string]any)["pattern"].(string))

	positive := func(s string) bool {
		d, err := spec.ParseDuration(s)
		return err == nil && !d.Infinite() && d.Std() > 0
	}
	for r := rune(0); r <= 0xFFFF; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		s := "1" + string(r) + "second"
		if re.MatchString(s) != positive(s) {
			t.Errorf("%q (U+%04X): pattern %v, loader %v", s, r, re.MatchString(s), positive(s))
		}
	}

	for _, s := range []string{
		"30 seconds", "500 millis", "1.5 minutes", "1 nano", "2 micros", "3 hours", "1 day", "2 weeks",
		"007 nanos", "0.5 seconds", "00.010 millis", "1 \t\u00a0\u3000 week", "1\ufeffsecond",
		"0 seconds", "0.0 seconds", "000.000 days", "-1 second", "-0.5 seconds", "Infinity", "-Infinity",
		"1. second", ".5 seconds", "+1 second", "1e3 seconds", "1 Second", "1 sec", "1s", "1second",
		" 1 second", "1 second ", "1 second\n", "1\u0085second", "1 secondss", "", "seconds",
	} {
		assert.Equal(t, positive(s), re.MatchString(s), "%q", s)
	}

	// What a pattern cannot know: the value. These match, and the loader
	// rejects them as zero (rounded to the nanosecond), out of range, or
	// infinite (overflowing float64 as in Effect).
	for _, s := range []string{"0.4 nanos", "0.0000001 millis", "300000 weeks", "1" + strings.Repeat("0", 400) + " weeks"} {
		assert.True(t, re.MatchString(s), "%q", s)
		assert.False(t, positive(s), "%q", s)
	}
}

// TestSchemaNamesEveryField: every field of plugins.yaml that the loader
// knows (the yaml tags of spec's types, read by reflection, so that a
// new field without a schema entry fails here) is a property of its
// object in schema.json, which forbids the others: an editor would
// reject a valid file that uses one.
func TestSchemaNamesEveryField(t *testing.T) {
	defs, ok := schemaDoc(t)["$defs"].(map[string]any)
	require.True(t, ok)
	for def, typ := range map[string]reflect.Type{
		"plugin": reflect.TypeFor[spec.Plugin](), "runner": reflect.TypeFor[spec.Runner](),
		"mount": reflect.TypeFor[spec.Mount](), "ready": reflect.TypeFor[spec.Ready](),
		"health": reflect.TypeFor[spec.Health](), "retry": reflect.TypeFor[spec.Retry](),
		"file": reflect.TypeFor[spec.File](), "elect": reflect.TypeFor[spec.Elect](),
		"etcd": reflect.TypeFor[spec.Etcd](),
	} {
		d, ok := defs[def].(map[string]any)
		require.True(t, ok, "$defs.%s", def)
		props, _ := d["properties"].(map[string]any)
		for _, name := range yamlFields(typ) {
			_, named := props[name]
			assert.True(t, named, "%s.%s is a field the loader knows; schema.json's $defs.%s does not name it", def, name, def)
		}
	}
}

// yamlFields are the YAML names of t's fields, those of its inline
// (embedded) structs included.
func yamlFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" || !f.IsExported():
		case strings.Contains(opts, "inline") || (f.Anonymous && tag == ""):
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, yamlFields(ft)...)
			}
		case name != "":
			out = append(out, name)
		}
	}
	return out
}
