//go:build unix

package slurm

import (
	"os"
	"syscall"
)

// ownedByMe reports whether fi, a file's Lstat, is this user's.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
