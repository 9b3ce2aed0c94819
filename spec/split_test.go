package spec

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// splitCorpus is every plugins file of the tests: the valid ones, the
// bad ones of testdata/errors, the fuzz corpus, and large generated ones,
// each also with plugin entries written in the ways a cut must survive.
func splitCorpus(t *testing.T) [][]byte {
	t.Helper()
	corpus := [][]byte{[]byte(designExample), []byte(hashBase), bigSpec(200)}
	files, err := filepath.Glob("testdata/valid/*.yaml")
	require.NoError(t, err)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		corpus = append(corpus, data)
	}
	files, err = filepath.Glob("testdata/errors/*.txtar")
	require.NoError(t, err)
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		require.NoError(t, err)
		corpus = append(corpus, section(t, ar, "plugins.yaml"))
	}
	files, err = filepath.Glob("testdata/fuzz/FuzzLoad/*")
	require.NoError(t, err)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		_, lit, ok := strings.Cut(string(data), "[]byte(")
		require.True(t, ok, file)
		s, err := strconv.Unquote(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(lit), ")")))
		require.NoError(t, err, file)
		corpus = append(corpus, []byte(s))
	}
	// An explicit key without a value, whose empty value yaml.v3 places
	// at the next entry's key.
	explicit := "name: x\nplugins:\n  a:\n    command: [./a]\n  ? b\n  c:\n    command: [./c]\n"
	return append(corpus, []byte(awkwardSpec), []byte(explicit))
}

// awkwardSpec has what a cut between plugin entries must get right:
// comments at the margin and in the block, blank lines, anchors and
// aliases within an entry and across entries, merge keys, block and
// multi-line scalars, a compact list, quoted keys, variables and keys
// after the block.
const awkwardSpec = `# a comment
name: shop   # the project
plugins:
  # a comment in the block
  a: &base
    command: [./a, "x"]
    env: {K: v}

  b:
    <<: *base
    dir: |
      ./srv
# a comment at the margin, inside the block
  c:
    command:
    - ./c
    - "two
      lines"
    uses: [a,
      b]
  "d":
    command: [./d, ${HOME:-/root}]
    ready:
      log: >
        folded
        text
  e: {command: [./e], uses: [d]}
  f:
    &anchor command: [./f]
runners:
  edge: {address: tcp://127.0.0.1:7070}
`

// mutate returns data with one random change of the kinds that break a
// YAML file or move its parts: a line removed, doubled, re-indented or
// cut short, a character that opens a quote, a list, an alias or a tab.
func mutate(rng *rand.Rand, data []byte) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	i := rng.IntN(len(lines))
	switch rng.IntN(8) {
	case 0:
		lines = append(lines[:i], lines[i+1:]...)
	case 1:
		lines = append(lines[:i+1], lines[i:]...)
	case 2:
		lines[i] = " " + lines[i]
	case 3:
		lines[i] = strings.TrimPrefix(lines[i], " ")
	case 4:
		lines[i] = lines[i][:rng.IntN(len(lines[i])+1)]
	default:
		odd := []string{`"`, "'", "[", "{", "*base", "&base ", "\t", ": ", "#", "- ", "|", "---\n", "\r", "? "}
		at := rng.IntN(len(lines[i]) + 1)
		lines[i] = lines[i][:at] + odd[rng.IntN(len(odd))] + lines[i][at:]
	}
	return []byte(strings.Join(lines, ""))
}

// TestSplitParseIsWholeParse: parsed in pieces, cut before every plugin
// entry, and decoded and checked on every core, each file of the corpus
// and dozens of mutations of each give the tree of the whole parse, and
// the same errors, byte for byte, or the same spec, as when parsed whole
// and decoded on one goroutine.
func TestSplitParseIsWholeParse(t *testing.T) {
	defer func(old struct{ min, pieces int }, par int) { splitting, minParallel = old, par }(splitting, minParallel)
	splitting.min, splitting.pieces, minParallel = 0, 1<<20, 2
	rng := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	opt := Options{Lookup: VarsLookup(map[string]string{"HOME": "/home/x"}), Digests: confined{dir}}
	whole := opt
	whole.whole = true
	split, files := 0, 0
	for _, base := range splitCorpus(t) {
		for m := range 60 {
			data := base
			if m > 0 {
				data = mutate(rng, base)
			}
			files++
			if root, ok := parseSplit("plugins.yaml", data); ok {
				split++
				want, err := parseWhole("plugins.yaml", data)
				require.NoError(t, err, "%s", data)
				sameTree(t, want, root, "", string(data))
			}
			s1, err1 := ParseWith("plugins.yaml", dir, data, whole)
			s2, err2 := ParseWith("plugins.yaml", dir, data, opt)
			if err1 != nil || err2 != nil {
				require.Error(t, err1, "%s", data)
				require.Error(t, err2, "%s", data)
				require.Equal(t, err1.Error(), err2.Error(), "%s", data)
				continue
			}
			s2 = s2.WithKey(s1.key)
			require.Equal(t, s1.Digest(), s2.Digest(), "%s", data)
			require.Equal(t, s1.Plugins, s2.Plugins, "%s", data)
		}
	}
	t.Logf("%d of %d files parsed in pieces", split, files)
	require.Greater(t, split, files/20, "too few files were parsed in pieces for the test to mean much")
}

// sameTree fails unless a and b are the same tree, comments aside: what
// the decoder reads of a node, and where it is.
func sameTree(t *testing.T, a, b *yaml.Node, path, src string) {
	t.Helper()
	got := fmt.Sprintf("%v %v %q %q %q %d:%d %d", b.Kind, b.Style, b.Tag, b.Value, b.Anchor, b.Line, b.Column, len(b.Content))
	want := fmt.Sprintf("%v %v %q %q %q %d:%d %d", a.Kind, a.Style, a.Tag, a.Value, a.Anchor, a.Line, a.Column, len(a.Content))
	require.Equal(t, want, got, "at %s of\n%s", path, src)
	require.Equal(t, a.Alias == nil, b.Alias == nil, "at %s of\n%s", path, src)
	if a.Alias != nil {
		require.Equal(t, [2]int{a.Alias.Line, a.Alias.Column}, [2]int{b.Alias.Line, b.Alias.Column}, "alias at %s of\n%s", path, src)
	}
	for i := range a.Content {
		sameTree(t, a.Content[i], b.Content[i], path+"/"+strconv.Itoa(i), src)
	}
}

// TestSplitBigFile: a large file is parsed in pieces at the default
// settings, into the tree of the whole parse.
func TestSplitBigFile(t *testing.T) {
	data := bigSpec(5000)
	root, ok := parseSplit("plugins.yaml", data)
	require.True(t, ok)
	want, err := parseWhole("plugins.yaml", data)
	require.NoError(t, err)
	sameTree(t, want, root, "", "the big file")
}

// TestVariableWrittenAsEscape: a variable whose $ is written as an escape
// of a double-quoted string is substituted too, as it always was.
func TestVariableWrittenAsEscape(t *testing.T) {
	src := "name: x\nplugins:\n  a: {command: [\"\\x24{WHO}\", \"\\u0024{WHO}\"]}\n"
	s, err := ParseWith("plugins.yaml", t.TempDir(), []byte(src), Options{Lookup: VarsLookup(map[string]string{"WHO": "me"})})
	require.NoError(t, err)
	require.Equal(t, []string{"me", "me"}, s.Plugins["a"].Command)
}

// TestEmptyFlowValue: the scan finds what the pattern it stands for
// finds, on chosen lines and on random ones over the bytes that matter.
func TestEmptyFlowValue(t *testing.T) {
	pattern := regexp.MustCompile(`[^:\[]:[ \t]*[\]},]`)
	cases := []string{"", ":", ":]", "a:]", "[a: ]", "{a: }", "{a: 1}", "[:]", "a::]", "a:\t ,", "x: [a: b]", "é:}", "a: b\nc:]"}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "a:[]{}, \t\n"
	for range 20000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		require.Equal(t, pattern.MatchString(c), emptyFlowValue([]byte(c)), "%q", c)
	}
}
