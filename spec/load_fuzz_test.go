package spec

import (
	"os"
	"path/filepath"
	"testing"
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
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("plugins.yaml", data)
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
		again, err := Parse("plugins.yaml", data)
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
