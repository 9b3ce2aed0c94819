package spec

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graftland/graft/internal/contentdigest"
)

// FuzzLoad feeds the loader arbitrary files. It must never panic; every
// problem must carry a line; and a file it accepts must hash the same when
// parsed again, under the same key.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(designExample))
	f.Add([]byte(hashBase))
	files, _ := filepath.Glob("testdata/valid/*.yaml")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	dir := f.TempDir()
	parse := func(data []byte) (*Spec, error) {
		return ParseWith("plugins.yaml", dir, data, Options{Lookup: VarsLookup(nil), Digests: confined{dir}})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parse(data)
		if err != nil {
			errs, ok := err.(Errors)
			if !ok {
				t.Fatalf("not an Errors: %T %v", err, err)
			}
			for _, e := range errs {
				if e.File != "plugins.yaml" || (e.Pos.Line < 1 && e.Msg == "") {
					t.Fatalf("problem without a place: %#v", e)
				}
			}
			return
		}
		again, err := parse(data)
		if err != nil {
			t.Fatalf("accepted once, rejected next: %v", err)
		}
		again = again.WithKey(s.key) // each parse has a key of its own
		if s.Digest() != again.Digest() {
			t.Fatal("the digest of one file changed between parses")
		}
		for name := range s.Plugins {
			if s.Hash(name) != again.Hash(name) {
				t.Fatalf("hash of %s changed between parses", name)
			}
		}
	})
}

// confined digests only what is under dir: a fuzzed files: [/] must not
// walk the machine's file system. Anything else does not exist.
type confined struct{ dir string }

func (c confined) Digest(path string) (string, error) {
	if rel, err := filepath.Rel(c.dir, path); err != nil || strings.HasPrefix(rel, "..") {
		return "", fs.ErrNotExist
	}
	return contentdigest.New("").Digest(path)
}
