package harness

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/runner/sandbox"
)

//go:embed check.py
var checkScript []byte

// Ref is one "module:function" of a spec and the spec key that names it.
type Ref struct {
	Key string `json:"key"`
	Ref string `json:"ref"`
}

// Problem is a Ref that cannot work: its module is missing, does not
// parse, or lacks the function. File and Line locate a syntax error (or
// the module that lacks the function).
type Problem struct {
	Key     string `json:"key"`
	Ref     string `json:"ref"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

// Where is "file:line: " (or "file: ") locating the problem, or "".
func (p Problem) Where() string {
	if p.File == "" {
		return ""
	}
	if p.Line > 0 {
		return p.File + ":" + strconv.Itoa(p.Line) + ": "
	}
	return p.File + ": "
}

// CheckRefs finds every ref's module and function with python, run in dir
// with env (PYTHONPATH as the workers get it), without importing anything:
// no experiment code runs and no GPU is touched. It returns the problems
// found; the error is for a check that could not run. It runs as user as
// (nil: the runner's own): Python imports a sitecustomize module from
// PYTHONPATH, the experiment's directory.
func CheckRefs(ctx context.Context, python, dir string, env []string, refs []Ref, as *sandbox.User) ([]Problem, error) {
	return checkRefs(ctx, python, dir, env, refs, as, time.Minute)
}

// CheckRefsOnHost is CheckRefs on the submitting machine, before the image
// is built, within timeout: it judges only the experiment's own modules
// (those on env's PYTHONPATH) and leaves the rest, installed packages that
// may be missing here or differ, to the check in the container. As
// CheckRefs, it parses the modules and imports none of them.
func CheckRefsOnHost(ctx context.Context, python, dir string, env []string, refs []Ref, timeout time.Duration) ([]Problem, error) {
	return checkRefs(ctx, python, dir, env, refs, nil, timeout, "host")
}

func checkRefs(ctx context.Context, python, dir string, env []string, refs []Ref, as *sandbox.User, timeout time.Duration, mode ...string) ([]Problem, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	arg, err := json.Marshal(refs)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out, errb bytes.Buffer
	// The script goes on the command line: no file of it for anyone to
	// change, wherever TMPDIR is.
	cmd := exec.CommandContext(ctx, python, append([]string{"-c", string(checkScript), string(arg)}, mode...)...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &out, &errb
	setProcAttr(cmd, as)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("check imports: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	var ps []Problem
	if err := json.Unmarshal(out.Bytes(), &ps); err != nil {
		return nil, fmt.Errorf("check imports: read its answer: %w", err)
	}
	return ps, nil
}
