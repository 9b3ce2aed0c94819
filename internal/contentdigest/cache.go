// Package contentdigest digests the content of files and directory trees
// that a plugin's process depends on (its executable, its files:), caching
// each file's digest by what stat says of it, so that an unchanged large
// binary is read once, however many plugins share it and however many
// plans are made (docs/state-dir.md, "The digest cache").
//
// The cache is kept by root: each path Digest is given (an executable, a
// files: entry, an env file) has one table, in memory and in one file of
// the cache's directory, that lists every file under it with its stat key
// and digest. A digest of a root writes its table again, whole and
// atomically, only when something under it changed, and the table then
// holds exactly the files the walk found: a changed file's old version,
// or a removed file, leaves nothing behind. Prune drops the tables of
// roots no longer named.
package contentdigest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/graftland/graft/internal/safefs"
)

// Cache digests files. Its zero value is not usable; New makes one. It is
// safe for concurrent use, and several processes may share its directory.
type Cache struct {
	dir string // "" keeps digests in memory only
	mu  sync.Mutex
	// roots holds the table of each root this Cache digested, by its
	// cleaned path.
	roots map[string]*table
	// reads counts the files actually read, for tests.
	reads int
}

// New returns a cache that keeps digests in dir, which must exist; dir ""
// keeps them in memory, for the life of the Cache.
func New(dir string) *Cache { return &Cache{dir: dir, roots: map[string]*table{}} }

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
	t := c.table(path)
	t.mu.Lock()
	defer t.mu.Unlock()
	c.refresh(t)
	next := make(map[string]entry, len(t.files))
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
		rel, _ := filepath.Rel(path, p)
		rel = filepath.ToSlash(rel)
		d, err := c.lookup(t, p, rel, fi, next)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%s\n", rel, d)
		return nil
	})
	if err != nil {
		return "", err
	}
	c.replace(t, next)
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

// file digests one regular file, a root of its own.
func (c *Cache) file(path string, fi fs.FileInfo) (string, error) {
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file or directory", path)
	}
	t := c.table(path)
	t.mu.Lock()
	defer t.mu.Unlock()
	c.refresh(t)
	next := make(map[string]entry, 1)
	d, err := c.lookup(t, path, ".", fi, next)
	if err != nil {
		return "", err
	}
	c.replace(t, next)
	return d, nil
}

// lookup is the digest of file p, rel in t's root, from t when its stat
// key is what t holds, else read; it goes into next, the table of this
// walk.
func (c *Cache) lookup(t *table, p, rel string, fi fs.FileInfo, next map[string]entry) (string, error) {
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file or directory", p)
	}
	key := statKey(fi)
	if e, ok := t.files[rel]; ok && e.key == key {
		next[rel] = e
		return e.digest, nil
	}
	d, err := c.read(p)
	if err != nil {
		return "", err
	}
	next[rel] = entry{key: key, digest: d}
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

// table is the cached digests of one root: of each file under it by its
// path relative to the root ("." for a root that is a file).
type table struct {
	root string
	mu   sync.Mutex // held by the digest of the root under way
	// files is what the last walk found, or what the cache's file held.
	files map[string]entry
	// seen is the stat key of the cache's file as last read or written:
	// when another process writes it, the table is read again.
	seen string
}

// entry is one file's digest and the stat key it was taken at.
type entry struct{ key, digest string }

// table returns root's table, empty until refresh reads it.
func (c *Cache) table(root string) *table {
	root = filepath.Clean(root)
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.roots[root]
	if t == nil {
		t = &table{root: root}
		c.roots[root] = t
	}
	return t
}

// refresh reads t's file again when another process wrote it since this
// one read or wrote it, so that what the other digested is not read again
// here. t.mu is held.
func (c *Cache) refresh(t *table) {
	if c.dir == "" {
		return
	}
	path := filepath.Join(c.dir, FileName(t.root))
	fi, err := os.Lstat(path)
	if err != nil {
		return // none yet, or pruned: what memory holds is still good
	}
	if key := statKey(fi); key != t.seen {
		if files, ok := readTable(path, t.root); ok {
			t.files = files
		}
		t.seen = key
	}
}

// replace makes next t's table, and writes it when it differs from what
// t held. t.mu is held. A failed write (a full disk) costs only reads
// next time, so it is not reported.
func (c *Cache) replace(t *table, next map[string]entry) {
	same := len(next) == len(t.files)
	for rel, e := range next {
		if !same {
			break
		}
		same = t.files[rel] == e
	}
	t.files = next
	if same || c.dir == "" {
		return
	}
	path := filepath.Join(c.dir, FileName(t.root))
	if writeTable(path, t.root, next) == nil {
		if fi, err := os.Lstat(path); err == nil {
			t.seen = statKey(fi)
		}
	}
}

// FileName is the name of root's table in the cache's directory: a digest
// of its path, so that any path makes a name of one length and no
// separator.
func FileName(root string) string {
	sum := sha256.Sum256([]byte("graft digests\x00" + filepath.Clean(root)))
	return hex.EncodeToString(sum[:20])
}

// ErrBusy is Prune's error when a parse under way holds the cache past
// the wait it was given: nothing was removed.
var ErrBusy = errors.New("a plan under way is reading the digest cache")

// Hold keeps Prune from removing anything until release is called: a
// parse holds the cache while it digests a spec's files, so that a prune
// (another host's apply, in another goroutine or process) does not take
// away a table it is about to use. Holds are shared: any number of parses
// hold at once. On a system without flock, and for a cache in memory,
// Hold holds nothing across processes.
func (c *Cache) Hold() (release func()) {
	if c.dir == "" {
		return func() {}
	}
	return holdShared(c.dir)
}

// Prune removes the tables of every root but those keep names, in memory
// and in the cache's directory, and any other file there (an older
// graft's entries, a temporary file a crash left). It first waits, up to
// wait, until no parse holds the cache (Hold), and holds it alone while
// it removes: a parse under way keeps every table it may still use, and
// Prune then fails with ErrBusy, to be done by the next one.
func (c *Cache) Prune(keep []string, wait time.Duration) error {
	kept := map[string]bool{}
	for _, k := range keep {
		kept[filepath.Clean(k)] = true
	}
	release := func() {}
	if c.dir != "" {
		var ok bool
		if release, ok = holdAlone(c.dir, wait); !ok {
			return ErrBusy
		}
	}
	defer release()
	c.mu.Lock()
	names := map[string]bool{}
	for root := range c.roots {
		if !kept[root] {
			delete(c.roots, root)
		}
	}
	for root := range kept {
		names[FileName(root)] = true
	}
	c.mu.Unlock()
	if c.dir == "" {
		return nil
	}
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if names[e.Name()] || e.IsDir() {
			continue
		}
		if err := os.Remove(filepath.Join(c.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Roots lists the roots whose tables this Cache holds in memory, for tests.
func (c *Cache) Roots() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var roots []string
	for r := range c.roots {
		roots = append(roots, r)
	}
	return roots
}

// wellFormed reports whether d is a digest as read computes them.
func wellFormed(d string) bool {
	hexPart, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil
}

// maxTable bounds what a table's file may hold: a tree of a million files.
const maxTable = 256 << 20

// readTable reads the table of root at path; false when it is missing,
// damaged, or another root's (the cache is then as if empty for it).
func readTable(path, root string) (map[string]entry, bool) {
	b, err := safefs.ReadFile(path, maxTable)
	if err != nil {
		return nil, false
	}
	return decodeTable(string(b), root)
}
