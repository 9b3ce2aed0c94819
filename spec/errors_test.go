package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"github.com/stretchr/testify/require"
)

// TestErrors holds the loader to the exact message of every validation
// rule. Each testdata/errors/<rule>.txtar has a plugins.yaml and the
// loader's output for it, want; -update rewrites want.
func TestErrors(t *testing.T) {
	files, err := filepath.Glob("testdata/errors/*.txtar")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			require.NoError(t, err)
			input, want := section(t, ar, "plugins.yaml"), section(t, ar, "want")
			_, err = Parse("plugins.yaml", input)
			require.Error(t, err, "the loader must reject this file")
			var errs Errors
			require.ErrorAs(t, err, &errs, "problems come as Errors")
			for _, e := range errs {
				require.Positive(t, e.Pos.Line, "every problem has a line: %v", e)
			}
			got := err.Error() + "\n"
			if *update {
				setSection(ar, "want", got)
				require.NoError(t, os.WriteFile(file, txtar.Format(ar), 0o644))
				return
			}
			require.Equal(t, string(want), got)
		})
	}
}

func section(t *testing.T, ar *txtar.Archive, name string) []byte {
	t.Helper()
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	t.Fatalf("no %s section", name)
	return nil
}

func setSection(ar *txtar.Archive, name, data string) {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			ar.Files[i].Data = []byte(data)
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data)})
}
