// Package sandbox keeps the code under test out of reach of what decides a
// job's results (docs/architecture.md, "Trust boundary"). In a job's
// container the runner starts as root with only the capabilities it needs
// (SETUID, SETGID, KILL) and runs every process of the experiment (Python
// probes, the import check, setup, workers, command benchmarks, Nsight
// Compute) as the worker user, which owns neither the output directory, nor
// the runner's files, nor its process. Before results are final every
// process of that user is killed, and the worker user's process limit stays
// under the container's, so that a fork bomb cannot take the runner's
// threads.
package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/xrun-dev/xrun/contract"
)

// User is the uid and gid experiment code runs as.
type User struct {
	UID, GID int
}

func (u User) String() string { return fmt.Sprintf("%d:%d", u.UID, u.GID) }

// ParseUser reads "uid:gid" (both numbers; gid defaults to uid).
func ParseUser(s string) (User, error) {
	us, gs, hasGID := strings.Cut(strings.TrimSpace(s), ":")
	uid, err := strconv.Atoi(us)
	if err != nil || uid < 0 {
		return User{}, fmt.Errorf("worker user %q: write it as uid:gid, e.g. %s", s, contract.JobUser)
	}
	gid := uid
	if hasGID {
		if gid, err = strconv.Atoi(gs); err != nil || gid < 0 {
			return User{}, fmt.Errorf("worker user %q: write it as uid:gid, e.g. %s", s, contract.JobUser)
		}
	}
	return User{UID: uid, GID: gid}, nil
}

// FromEnv returns the worker user the client asked for
// (contract.EnvWorkerUser), or nil when experiment code runs as the
// runner's own user (xrun run --local, xrun submit --root). Asking for one
// when the runner cannot switch users (it is not root) is an error: the
// job could not keep its results apart from the code it measures.
func FromEnv() (*User, error) {
	v := os.Getenv(contract.EnvWorkerUser)
	if v == "" {
		return nil, nil
	}
	u, err := ParseUser(v)
	if err != nil {
		return nil, err
	}
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("%s=%s: running the experiment's code as another user needs Linux", contract.EnvWorkerUser, v)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%s=%s asks to run the experiment's code as another user, but the runner runs as uid %d, not root: start the container as root (its capabilities can be only SETUID, SETGID and KILL)",
			contract.EnvWorkerUser, v, os.Geteuid())
	}
	if u.UID == 0 {
		return nil, fmt.Errorf("%s=%s: the worker user must not be root", contract.EnvWorkerUser, v)
	}
	return &u, nil
}
