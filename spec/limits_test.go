package spec

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExpansionIsBounded: a variable of 1 MiB used 300 times would make
// a spec of 300 MiB; the parse refuses it at MaxSize, naming the cap and
// where it was passed, and allocates a small part of that.
func TestExpansionIsBounded(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	uses := strings.TrimSuffix(strings.Repeat("'${BIG}', ", 300), ", ")
	data := "plugins:\n  a: {command: [" + uses + "]}\n  b: {command: ['${BIG}']}\n"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ParseWith("plugins.yaml", t.TempDir(), []byte(data), Options{Lookup: VarsLookup(map[string]string{"BIG": big})})
	runtime.ReadMemStats(&after)
	require.Error(t, err)
	errs := err.(Errors)
	require.Len(t, errs, 1, "said once: %v", err)
	assert.Equal(t, "plugins.a.command[3]", errs[0].Path, "the fourth use, with the file itself, passes 4 MiB")
	assert.Contains(t, errs[0].Msg, "larger than 4 MiB, the most a plugins file may be")
	assert.NotContains(t, err.Error(), "xxxx", "the value is not quoted")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "the parse allocated no more than a few times the cap")

	// Up to the cap it is a spec like another.
	s, err := ParseWith("plugins.yaml", t.TempDir(), []byte("plugins:\n  a: {command: ['${BIG}', '${BIG}']}\n"),
		Options{Lookup: VarsLookup(map[string]string{"BIG": big})})
	require.NoError(t, err)
	assert.Len(t, s.Plugins["a"].Command[1], 1<<20)
}

// TestSpecSizeIsBounded: a plugins file larger than MaxSize is refused
// before it is parsed, and before it has all been read.
func TestSpecSizeIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plugins.yaml")
	data := []byte("plugins: {}\n# " + strings.Repeat("x", MaxSize) + "\n")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, err := Load(path)
	require.Error(t, err)
	assert.Equal(t, path+":1:1: larger than 4 MiB, the most a plugins file may be", err.Error())
	_, err = Parse(path, data)
	assert.Equal(t, path+":1:1: larger than 4 MiB, the most a plugins file may be", err.Error())

	// /dev/zero never ends: it is read to the cap, no further.
	_, err = Read("/dev/zero")
	assert.EqualError(t, err, "/dev/zero:1:1: larger than 4 MiB, the most a plugins file may be")
}
