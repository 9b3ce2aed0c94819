//go:build linux

package main

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// skewVersions are the releases TestSkew builds graft as.
var skewVersions = []string{"v1.2.0", "v1.3.0"}

// TestSkew runs the scripts of testdata/skew, where a CLI, a host and a
// runner of different versions meet. graft is built once per version of
// skewVersions, as a release is built (-ldflags -X, README "Install"),
// and each is on the scripts' PATH as graft-VERSION; graft itself is
// this test binary, of version devel.
func TestSkew(t *testing.T) {
	bin := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, len(skewVersions))
	for i, v := range skewVersions {
		wg.Go(func() { errs[i] = buildGraft(v, filepath.Join(bin, "graft-"+v)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	p := scriptParams("testdata/skew")
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		if err := setup(env); err != nil {
			return err
		}
		env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
		return nil
	}
	testscript.Run(t, p)
}
