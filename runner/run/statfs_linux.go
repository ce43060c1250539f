package run

import "syscall"

// fsBytes is the size of the file system at path, 0 when unknown.
func fsBytes(path string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0
	}
	return int64(st.Blocks) * st.Bsize
}
