//go:build !linux

package sandbox

import (
	"errors"
	"syscall"
	"time"
)

var errLinux = errors.New("running experiment code as another user needs Linux")

// Apply is a no-op where the runner cannot switch users (FromEnv refuses
// a worker user there).
func (u *User) Apply(attr *syscall.SysProcAttr) {}

// LimitProcs needs Linux.
func (u *User) LimitProcs(cgroupRoot string) (int64, error) { return 0, errLinux }

// KillAll needs Linux.
func (u *User) KillAll(procRoot string, limit time.Duration) ([]string, error) {
	if u == nil {
		return nil, nil
	}
	return nil, errLinux
}

// Alive needs Linux.
func (u *User) Alive(procRoot string) (int, error) { return 0, errLinux }

// CheckPrivate needs Linux.
func CheckPrivate(dir string) error { return errLinux }

// Init does nothing outside Linux.
func Init() (code int, isInit bool) { return 0, false }

// AdoptOrphans needs Linux: elsewhere a process that leaves the job's
// process group outlives the job.
func AdoptOrphans() error { return errLinux }

// KillDescendants finds nothing outside Linux.
func KillDescendants(limit time.Duration) []string { return nil }

// ReapAdopted does nothing outside Linux.
func ReapAdopted(keep ...int) {}
