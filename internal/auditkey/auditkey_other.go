//go:build !unix

package auditkey

import (
	"fmt"
	"os"
)

const oNoFollow = 0

func isLoop(error) bool { return false }

// checkDir refuses a directory that is not one (permissions are the
// platform's ACLs, not checked here).
func checkDir(dir string) error {
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("audit key: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrInsecure, dir)
	}
	return nil
}

// checkFile refuses a key file that is not a regular file.
func checkFile(path string, info os.FileInfo) error {
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrInsecure, path)
	}
	return nil
}
