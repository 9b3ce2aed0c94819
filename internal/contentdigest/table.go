package contentdigest

import (
	"sort"
	"strconv"
	"strings"

	"github.com/graftland/graft/internal/atomicfile"
)

// tableHeader opens every table's file; a file without it (an older
// graft's entry) is no table.
const tableHeader = "graft digests 1\n"

// encodeTable is the text of root's table: the header, the root's path,
// then a line per file, sorted by path: its stat key, its digest and its
// path relative to the root, quoted.
//
//	graft digests 1
//	root "/srv/shop/static"
//	d65024-i247766-s43-m1663687647000000000-c1663687647000000000 sha256:… "css/a.css"
func encodeTable(root string, files map[string]entry) []byte {
	rels := make([]string, 0, len(files))
	for rel := range files {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	var b strings.Builder
	b.Grow(len(tableHeader) + len(root) + 10 + len(files)*160)
	b.WriteString(tableHeader)
	b.WriteString("root " + strconv.Quote(root) + "\n")
	for _, rel := range rels {
		e := files[rel]
		b.WriteString(e.key)
		b.WriteByte(' ')
		b.WriteString(e.digest)
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(rel))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// decodeTable reads what encodeTable wrote for root; false for anything
// else, a table of another root included.
func decodeTable(text, root string) (map[string]entry, bool) {
	rest, ok := strings.CutPrefix(text, tableHeader)
	if !ok {
		return nil, false
	}
	line, rest, ok := strings.Cut(rest, "\n")
	if !ok || line != "root "+strconv.Quote(root) {
		return nil, false
	}
	files := map[string]entry{}
	for rest != "" {
		if line, rest, ok = strings.Cut(rest, "\n"); !ok {
			return nil, false // cut short
		}
		key, line, ok1 := strings.Cut(line, " ")
		digest, quoted, ok2 := strings.Cut(line, " ")
		rel, err := strconv.Unquote(quoted)
		if !ok1 || !ok2 || err != nil || key == "" || !wellFormed(digest) {
			return nil, false
		}
		files[rel] = entry{key: key, digest: digest}
	}
	return files, true
}

// writeTable writes root's table to path, whole: a crash leaves the old
// table or the new one.
func writeTable(path, root string, files map[string]entry) error {
	return atomicfile.Write(path, encodeTable(root, files), 0o600)
}
