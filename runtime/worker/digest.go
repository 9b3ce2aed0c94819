package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/tetratelabs/wazero"
)

// load returns the runtime of a memory limit and the module at path
// compiled in it. A module already compiled, its file unchanged, is
// neither read nor hashed again. The caller owes a release.
func (w *Worker) load(path, name string, pages uint32) (wazero.Runtime, *compiled, error) {
	if sum, ok := w.digestOf(path); ok {
		rt, code, err := w.compiledAs(pages, sum)
		if err != nil {
			return nil, nil, fmt.Errorf("compile %s: %w", name, err)
		}
		if code != nil {
			return rt, code, nil
		}
	}
	bin, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	rt, code, err := w.compile(pages, bin)
	if err != nil {
		return nil, nil, fmt.Errorf("compile %s: %w", name, err)
	}
	return rt, code, nil
}

// digestOf returns the digest of the module file at path without reading
// it when its stat has not changed since it was last read (see
// contentdigest.Cache: device, inode, size, mtime and ctime), so that a
// start of a module already compiled costs a stat, not a read and a hash
// of megabytes. ok is false when the file must be read: it is not a
// regular file, or it cannot be digested, in which case reading it tells
// why.
func (w *Worker) digestOf(path string) (sum [sha256.Size]byte, ok bool) {
	d, err := w.digests.File(path)
	if err != nil {
		return sum, false
	}
	b, err := hex.DecodeString(strings.TrimPrefix(d, "sha256:"))
	if err != nil || len(b) != sha256.Size {
		return sum, false
	}
	return [sha256.Size]byte(b), true
}
