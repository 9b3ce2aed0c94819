//go:build linux

package spec

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFilesThatBlock: a file a spec names whose read would block (a FIFO,
// procfs's kmsg) or whose content is the kernel's (/proc, /sys) is an
// error at its entry, at once; an env file of that kind too. Nothing is
// left waiting on it (goleak, in TestMain).
func TestFilesThatBlock(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bin/api"), "#!/bin/sh\n")
	fifo := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, c := range []struct{ entry, want string }{
		{"files: [pipe]", "plugins.api.files[0]: pipe: " + fifo + ": not a regular file or directory"},
		{"files: [/proc/self/status]", "a file of the kernel's (/proc, /sys)"},
		{"files: [/proc/sys/kernel]", "a file of the kernel's (/proc, /sys)"},
		{"envFile: [pipe]", "plugins.api.envFile[0]: pipe: unsafe path " + fifo + ": it is a named pipe, not a regular file"},
		{"envFile: [/proc/self/environ]", "a file of the kernel's (/proc, /sys)"},
	} {
		began := time.Now()
		_, err := parseAt(t, dir, "plugins:\n  api:\n    command: [bin/api]\n    "+c.entry+"\n")
		require.Error(t, err, c.entry)
		assert.Contains(t, err.Error(), c.want, c.entry)
		assert.Less(t, time.Since(began), 5*time.Second, "%s: refused, not waited on", c.entry)
	}
	if _, err := os.Stat("/proc/kmsg"); err == nil {
		_, err := parseAt(t, dir, "plugins:\n  api:\n    command: [bin/api]\n    files: [/proc/kmsg]\n")
		require.Error(t, err, "procfs's kmsg blocks on read")
		assert.Contains(t, err.Error(), "plugins.api.files[0]: /proc/kmsg")
	}
}

// TestFilesOnChangeNoneNotRead: a file with onChange: none is no part of
// its plugin's state, and is not read: a FIFO there does not block.
func TestFilesOnChangeNoneNotRead(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bin/api"), "#!/bin/sh\n")
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600))
	s, err := parseAt(t, dir, "plugins:\n  api:\n    command: [bin/api]\n    files: [{path: pipe, onChange: none}]\n")
	require.NoError(t, err)
	assert.NotContains(t, s.Fields("api"), FileField("pipe"))
	_, err = parseAt(t, dir, "plugins:\n  api:\n    command: [bin/api]\n    files: [{path: missing, onChange: none}]\n")
	require.Error(t, err, "it is still there")
	assert.Contains(t, err.Error(), "plugins.api.files[0]: missing: no such file or directory")
}

// hung is a Digester whose reads of one path never end until released:
// a hung network mount, which the test cannot make here.
type hung struct {
	path    string
	release chan struct{}
}

func (h *hung) Digest(path string) (string, error) {
	if path == h.path {
		<-h.release
	}
	return "sha256:" + "00000000000000000000000000000000000000000000000000000000000000ff", nil
}

// TestReadTimeout: the reads of a spec's files end by a deadline; a file
// whose read does not end fails its entry, naming it and the bound.
func TestReadTimeout(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bin/api"), "#!/bin/sh\n")
	write(t, filepath.Join(dir, "conf"), "x")
	dg := &hung{path: filepath.Join(dir, "conf"), release: make(chan struct{})}
	defer close(dg.release)
	began := time.Now()
	_, err := ParseWith(filepath.Join(dir, "plugins.yaml"), dir, []byte("plugins:\n  api:\n    command: [bin/api]\n    files: [conf]\n"),
		Options{Lookup: VarsLookup(nil), Digests: dg, ReadTimeout: 200 * time.Millisecond})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plugins.api.files[0]: conf: not read within 200 millis")
	assert.Less(t, time.Since(began), 5*time.Second)
}
