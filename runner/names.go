package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// maxName bounds an instance name, in bytes.
const maxName = 200

// checkName reports why name is not an instance name: 1 to 200 bytes of
// printable ASCII other than '/' and '\', and not "." or "..".
func validateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("bad instance name: empty")
	case len(name) > maxName:
		return fmt.Errorf("bad instance name: %d bytes, more than %d", len(name), maxName)
	case name == "." || name == "..":
		return fmt.Errorf("bad instance name %q", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c > 0x7e || c == '/' || c == '\\' {
			return fmt.Errorf("bad instance name %q: byte %#02x at %d (printable ASCII other than / and \\ only)", name, c, i)
		}
	}
	return nil
}

// maxEscaped bounds an escaped name, so that it, with ".json" and the
// temporary names of atomicfile around it, stays within the 255 bytes a
// file name may have.
const maxEscaped = 200

// escape turns any string into a file name, one to one: bytes in
// [A-Za-z0-9_.-] stay, every other byte (the '%' included) becomes %XX,
// and so does a leading '.', so no name is "." or "..", hidden, or holds a
// '/'. A name whose escape is longer than maxEscaped keeps a prefix of it
// and ends in '~' and the SHA-256 of the name: '~' is never kept by
// escaping, so such a name cannot meet a short one, and two long ones
// meet only if their digests do.
func escape(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if keep(c) && !(i == 0 && c == '.') {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	s := b.String()
	if len(s) <= maxEscaped {
		return s
	}
	sum := sha256.Sum256([]byte(name))
	digest := hex.EncodeToString(sum[:])
	cut := maxEscaped - 1 - len(digest)
	// Never cut a %XX in two; the prefix is only for people to read.
	if i := strings.LastIndexByte(s[:cut], '%'); i >= cut-2 {
		cut = i
	}
	return s[:cut] + "~" + digest
}

func keep(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}
