package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/runner/sandbox"
)

// probe is what an interpreter must run to host the harness.
const probe = "import sys, numpy; numpy.ndarray; assert sys.version_info >= (3, 9), 'Python >= 3.9 is needed'; print(sys.version.split()[0])"

// Candidates are the interpreters FindPython tries, in order, when none is
// given: the first python3 on PATH may be a pyenv or venv one without numpy
// while the system's has it.
var Candidates = []string{"python3", "/usr/bin/python3", "/usr/local/bin/python3", "/opt/conda/bin/python3", "python"}

// FindPython returns an interpreter that can run the harness (Python >= 3.9
// with numpy), probed as user as (nil: the runner's own). With prefer set,
// only that one is tried. When ctx ends first
// the error wraps ctx.Err() (errors.Is context.Canceled or
// DeadlineExceeded): the probe it killed says nothing about the machine's
// Python.
func FindPython(ctx context.Context, prefer string, as *sandbox.User) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", stoppedLooking(err)
	}
	if prefer != "" {
		path, err := exec.LookPath(prefer)
		if err != nil {
			return "", fmt.Errorf("python %q: %w", prefer, err)
		}
		if _, err := probePython(ctx, path, as); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return "", stoppedLooking(cerr)
			}
			return "", fmt.Errorf("python %s cannot run the harness: %w", path, err)
		}
		return path, nil
	}
	var tried []string
	seen := map[string]bool{}
	for _, c := range Candidates {
		if err := ctx.Err(); err != nil {
			return "", stoppedLooking(err)
		}
		path, err := exec.LookPath(c)
		if err != nil || seen[path] {
			continue
		}
		seen[path] = true
		if _, err := probePython(ctx, path, as); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return "", stoppedLooking(cerr)
			}
			tried = append(tried, fmt.Sprintf("%s (%v)", path, err))
			continue
		}
		return path, nil
	}
	if len(tried) == 0 {
		return "", fmt.Errorf("no python3 found on PATH; install Python >= 3.9 with numpy (apt-get install python3-numpy) or pass --python")
	}
	return "", fmt.Errorf("no Python >= 3.9 with numpy found (tried %s); install numpy for one of them or pass --python", strings.Join(tried, "; "))
}

func stoppedLooking(err error) error {
	return fmt.Errorf("stopped while looking for Python: %w", err)
}

// probeTimeout bounds one probe: an interpreter that hangs importing numpy
// (a network home directory, a broken site-packages) is passed over.
const probeTimeout = 30 * time.Second

func probePython(ctx context.Context, path string, as *sandbox.User) (string, error) {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(pctx, path, "-c", probe)
	cmd.Stdout, cmd.Stderr = &out, &errb
	// A wrapper script's children may keep the pipes open after the kill:
	// the stop must not wait for them.
	cmd.WaitDelay = 2 * time.Second
	// Away from the caller's directory, where a folder named numpy would
	// pass for the package.
	cmd.Dir = os.TempDir()
	setProcAttr(cmd, as)
	if err := cmd.Run(); err != nil {
		if ctx.Err() == nil && pctx.Err() != nil {
			return "", fmt.Errorf("no answer within %s", probeTimeout)
		}
		msg := strings.TrimSpace(errb.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("%s", msg)
	}
	return strings.TrimSpace(out.String()), nil
}
