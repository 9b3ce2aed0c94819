//go:build !windows

package elect

import "os"

func openShared(path string) (*os.File, error) { return os.Open(path) }

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
