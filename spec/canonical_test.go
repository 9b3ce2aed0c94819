package spec

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The encoding of Fields before canonical.go, kept here as the reference
// that the hand-written one must match byte for byte: saved plans and
// running state hold digests of it.

func refFlatten(v reflect.Value, prefix string, out map[string]string) {
	for i := range v.NumField() {
		name, opts, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		f := v.Field(i)
		if opts == "inline" {
			// Fields embedded inline (launch.Probe) were the struct's own.
			refFlatten(f, prefix, out)
			continue
		}
		if name == "" || name == "-" || f.IsZero() {
			continue
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		switch {
		case f.Kind() == reflect.Pointer && f.Elem().Kind() == reflect.Struct:
			refFlatten(f.Elem(), key, out)
			out[key] = "{}"
		case f.Kind() == reflect.Struct && !f.Type().Implements(textMarshaler) && !f.Type().Implements(jsonMarshaler):
			refFlatten(f, key, out)
		case f.Kind() == reflect.Map:
			for _, k := range f.MapKeys() {
				out[key+"."+k.String()] = refJSON(f.MapIndex(k).Interface())
			}
		default:
			out[key] = refJSON(f.Interface())
		}
	}
}

func refJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func refDigest(fields map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		fmt.Fprintf(h, "%s\x00%s\n", k, fields[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// refEnvDigest is the digest of an env value as it was made, with a MAC
// of its own.
func refEnvDigest(k DigestKey, name, value string) string {
	m := hmac.New(sha256.New, k[:])
	m.Write([]byte("env\x00" + name + "\x00" + value))
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
}

// refFields is computeFields as it was, with the reference encoding.
func refFields(s *Spec, name string) map[string]string {
	p := s.Plugins[name]
	out := map[string]string{}
	refFlatten(reflect.ValueOf(p).Elem(), "", out)
	if len(p.Uses) > 0 {
		out["uses"] = refJSON(slices.Sorted(slices.Values(p.Uses)))
	}
	if len(p.InheritEnv) > 0 {
		out["inheritEnv"] = refJSON(slices.Sorted(slices.Values(p.InheritEnv)))
	}
	maps.Copy(out, s.content[name])
	for k, v := range p.Env {
		out["env."+k] = refJSON(refEnvDigest(s.key, k, v))
	}
	if p.Run == OnRunner {
		addr := ""
		if r := s.Runners[p.Runner]; r != nil {
			addr = r.Address
		}
		out["runner.address"] = refJSON(addr)
	}
	return out
}

// oddStrings are strings whose JSON needs escapes, or none.
var oddStrings = []string{
	"", "plain", "./bin/api", "--port", "a b", `quo"te`, `back\slash`, "<html>", "a&b", "tab\there",
	"line\nbreak", "\r", "\x00nul", "\x7f", "\u2028\u2029", "héllo", "日本", "\xff\xfe bad utf-8",
	"emoji 🙂", "\b\f", "$HOME", "${VAR}", "\u007e~", " ", "'single'",
}

// randomValue fills v, of any type a Spec holds, at random; each field
// is left zero one time in five, so every field is set in most plugins.
func randomValue(rng *rand.Rand, v reflect.Value) {
	switch v.Type() {
	case reflect.TypeFor[Duration]():
		ds := []Duration{FromStd(0), FromStd(1), FromStd(1500 * 1e6), FromStd(math.MaxInt64), FromStd(math.MinInt64), {inf: 1}, {inf: -1}}
		v.Set(reflect.ValueOf(ds[rng.IntN(len(ds))]))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(oddStrings[rng.IntN(len(oddStrings))])
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Uint64:
		us := []uint64{0, 1, 65535, math.MaxUint64 - 1, math.MaxUint64}
		v.SetUint(us[rng.IntN(len(us))])
	case reflect.Int, reflect.Int64:
		ints := []int64{0, 1, -1, 3, 8080, math.MaxInt64, math.MinInt64, 1 << 30}
		v.SetInt(ints[rng.IntN(len(ints))])
	case reflect.Float64:
		fs := []float64{0, 1, 2, 1.5, 1e21, 1e-7, 123456789.125, -0.5, 1e20, 3.3333333333333335}
		v.SetFloat(fs[rng.IntN(len(fs))])
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		randomValue(rng, v.Elem())
	case reflect.Slice:
		n := rng.IntN(4) // 0: an empty list, which is set, not zero
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			randomValue(rng, s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range rng.IntN(4) {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			randomValue(rng, k)
			randomValue(rng, e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && rng.IntN(5) > 0 {
				randomValue(rng, v.Field(i))
			}
		}
	default:
		panic("randomValue: " + v.Type().String())
	}
}

// TestCanonicalEncodingMatchesJSON: the hand-written encoding of Fields
// and their digest are byte for byte the encoding/json and fmt ones they
// replaced, over thousands of random plugins and runners that set every
// field, with strings that need escapes.
func TestCanonicalEncodingMatchesJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := &Spec{Plugins: map[string]*Plugin{}, Runners: map[string]*Runner{}, key: testKey,
		content: map[string]map[string]string{}}
	seen := map[string]bool{}
	for i := range 5000 {
		p, r := &Plugin{}, &Runner{}
		randomValue(rng, reflect.ValueOf(p).Elem())
		randomValue(rng, reflect.ValueOf(r).Elem())
		for _, f := range reflect.VisibleFields(reflect.TypeFor[Plugin]()) {
			if !reflect.ValueOf(p).Elem().FieldByIndex(f.Index).IsZero() {
				seen[f.Name] = true
			}
		}
		name := fmt.Sprintf("p%d", i)
		p.Runner = name
		s.Plugins[name], s.Runners[name] = p, r
		if i%3 == 0 {
			s.content[name] = map[string]string{"files./etc/x": `"sha256:00"`}
		}
		want, got := map[string]string{}, map[string]string{}
		refFlatten(reflect.ValueOf(r).Elem(), "runners.x", want)
		flatten(reflect.ValueOf(r).Elem(), "runners.x", got)
		require.Equal(t, want, got, "runner %d", i)
		want, got = refFields(s, name), s.computeFields(name)
		require.Equal(t, want, got, "plugin %d: %#v", i, p)
		require.Equal(t, refDigest(want), digestFields(got), "plugin %d", i)
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Plugin]()) {
		if f.IsExported() && f.Tag.Get("yaml") != "-" {
			require.True(t, seen[f.Name], "no plugin set %s", f.Name)
		}
	}
	for _, str := range oddStrings {
		require.Equal(t, refJSON(str), jsonString(str), "%q", str)
	}
}

// TestIndexUnderKeysMatchesReference: the Fields and Hash of every plugin
// of the valid test files, under the key of a parse and under another
// (WithKey, which reuses those of plugins without env), are those of the
// reference encoding.
func TestIndexUnderKeysMatchesReference(t *testing.T) {
	for _, src := range []string{hashBase, string(bigSpec(300))} {
		s, err := Parse("plugins.yaml", []byte(src))
		require.NoError(t, err)
		for _, c := range []*Spec{s, s.WithKey(testKey), s.WithKey(testKey).WithKey(DigestKey{9})} {
			for name := range c.Plugins {
				require.Equal(t, refFields(c, name), c.Fields(name), name)
				require.Equal(t, refDigest(refFields(c, name)), c.Hash(name), name)
			}
		}
	}
}

// bigSpec is a file of n plugins, some with env, enough to hash on more
// than one goroutine.
func bigSpec(n int) []byte {
	var b strings.Builder
	b.WriteString("name: big\nplugins:\n")
	for i := range n {
		fmt.Fprintf(&b, "  p%d:\n    command: [./p, \"%d\"]\n", i, i)
		if i%7 == 0 {
			fmt.Fprintf(&b, "    env: {K: \"%d\"}\n", i)
		}
		if i > 0 {
			fmt.Fprintf(&b, "    uses: [p%d]\n", i-1)
		}
	}
	return []byte(b.String())
}

// TestIndexConcurrent: the caches of a loaded spec are filled once, on
// first use, whichever goroutines ask at once (run under -race).
func TestIndexConcurrent(t *testing.T) {
	s, err := Parse("plugins.yaml", bigSpec(300))
	require.NoError(t, err)
	s = s.WithKey(testKey)
	want := map[string]string{}
	for name := range s.Plugins {
		want[name] = refDigest(refFields(s, name))
	}
	var wg sync.WaitGroup
	hashes := make([]map[string]string, 4)
	for g := range hashes {
		wg.Go(func() {
			hashes[g] = map[string]string{}
			for name := range s.Plugins {
				hashes[g][name] = s.Hash(name)
				_ = s.Fields(name)
			}
			_ = s.Digest()
		})
	}
	wg.Wait()
	for _, h := range hashes {
		require.Equal(t, want, h)
	}
}

// TestEnvDigestReusesNoState: the MACs kept between env values give the
// digest a MAC of its own would, under two keys taken in turns, on
// several goroutines at once, for values longer and shorter than the last.
func TestEnvDigestReusesNoState(t *testing.T) {
	keys := []DigestKey{testKey, NewDigestKey()}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range 2000 {
				k := keys[rng.IntN(len(keys))]
				name := oddStrings[rng.IntN(len(oddStrings))]
				value := strings.Repeat(oddStrings[rng.IntN(len(oddStrings))], rng.IntN(100))
				want := refJSON(refEnvDigest(k, name, value))
				if got := k.envDigest(name, value); got != want {
					t.Errorf("goroutine %d, value %d: %s, want %s", g, i, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
