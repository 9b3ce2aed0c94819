// Package contentdigest digests the content of files and directory trees
// that a plugin's process depends on (its executable, its files:), caching
// each file's digest by what stat says of it, so that an unchanged large
// binary is read once, however many plugins share it and however many
// plans are made (docs/state-dir.md, "digests/").
package contentdigest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/safefs"
)

// Cache digests files. Its zero value is not usable; New makes one. It is
// safe for concurrent use, and several processes may share its directory.
type Cache struct {
	dir string // "" keeps digests in memory only
	mu  sync.Mutex
	mem map[string]string // stat key → digest
	// reads counts the files actually read, for tests.
	reads int
}

// New returns a cache that keeps digests in dir, which must exist; dir ""
// keeps them in memory, for the life of the Cache.
func New(dir string) *Cache { return &Cache{dir: dir, mem: map[string]string{}} }

// Reads returns how many files the cache has read to digest them.
func (c *Cache) Reads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// Digest returns the content digest of path, "sha256:" and 64 hex
// digits: of the file it names (following links), or, for a directory, of
// every file under it with its path relative to it, in order.
func (c *Cache) Digest(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return c.file(path, fi)
	}
	if err := checkDir(path); err != nil {
		return "", err
	}
	h := sha256.New()
	err = filepath.WalkDir(path, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return nil
		}
		fi, err := os.Stat(p) // a link counts as what it names
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return nil // a link to a directory: not followed, as WalkDir does not
		}
		d, err := c.file(p, fi)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(path, p)
		fmt.Fprintf(h, "%s\x00%s\n", filepath.ToSlash(rel), d)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// File returns the content digest of the regular file path names
// (following links), as Digest does, and an error for anything else.
func (c *Cache) File(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	return c.file(path, fi)
}

// file digests one regular file, from the cache when its stat key is
// there.
func (c *Cache) file(path string, fi fs.FileInfo) (string, error) {
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file or directory", path)
	}
	key := statKey(fi)
	c.mu.Lock()
	d, ok := c.mem[key]
	c.mu.Unlock()
	if ok {
		return d, nil
	}
	if d, ok = c.load(key); !ok {
		var err error
		if d, err = c.read(path); err != nil {
			return "", err
		}
		c.store(key, d)
	}
	c.mu.Lock()
	c.mem[key] = d
	c.mu.Unlock()
	return d, nil
}

func (c *Cache) read(path string) (string, error) {
	f, err := openContent(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// load reads a digest the cache's directory holds for key. Anything but
// a well-formed digest is a miss: the file is read again.
func (c *Cache) load(key string) (string, bool) {
	if c.dir == "" {
		return "", false
	}
	b, err := safefs.ReadFile(filepath.Join(c.dir, key), 128)
	d := strings.TrimSpace(string(b))
	if err != nil || !wellFormed(d) {
		return "", false
	}
	return d, true
}

// store keeps a digest in the cache's directory. A failure (a full disk)
// only costs a read next time, so it is not reported.
func (c *Cache) store(key, digest string) {
	if c.dir == "" {
		return
	}
	_ = atomicfile.Write(filepath.Join(c.dir, key), []byte(digest+"\n"), 0o600)
}

func wellFormed(d string) bool {
	hexPart, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil
}
