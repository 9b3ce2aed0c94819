package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// command matches a plugin's command in Spec's output, with its id.
var command = regexp.MustCompile(`command: \[\./bin/p, --id, "(\d+)"`)

// ShippedSpec is Spec with each plugin's command one of binaries
// executables, ./bin/p000 to ./bin/pNNN, by its id: the file of a deploy
// that ships its binaries beside the plugins file.
func ShippedSpec(n, edges, version, changeEvery, binaries int) []byte {
	return command.ReplaceAllFunc(Spec(n, edges, version, changeEvery), func(m []byte) []byte {
		id, _ := strconv.Atoi(string(command.FindSubmatch(m)[1]))
		return fmt.Appendf(nil, `command: [./bin/p%03d, --id, "%d"`, id%binaries, id)
	})
}

// WriteBinaries makes dir/bin/p000 ... of ShippedSpec: binaries files of
// size bytes each, different in their first bytes. They are sparse, so
// they take no disk, but digesting one still reads every byte.
func WriteBinaries(dir string, binaries int, size int64) error {
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return err
	}
	for i := range binaries {
		f, err := os.OpenFile(filepath.Join(dir, "bin", fmt.Sprintf("p%03d", i)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(f, "binary %d\n", i)
		if err == nil {
			err = f.Truncate(size)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
