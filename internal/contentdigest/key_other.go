//go:build !unix

package contentdigest

import (
	"fmt"
	"io/fs"
)

// statKey identifies a file's content by its size and modification time,
// all that stat says portably.
func statKey(fi fs.FileInfo) string {
	return fmt.Sprintf("s%d-m%d", fi.Size(), fi.ModTime().UnixNano())
}
