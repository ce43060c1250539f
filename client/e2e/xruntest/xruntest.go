// Package xruntest runs the xrun binary as a user would, for the
// end-to-end suites (client/e2e, client/e2e/k8s, client/hosts): one call
// with a time limit, its exit code and output, and the check every suite
// makes of them.
package xruntest

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Result is how one xrun call ended.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Run runs bin with args in the environment env and waits at most limit.
// A binary that cannot start, or a call that runs past limit, fails t.
func Run(t testing.TB, limit time.Duration, bin string, env []string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	default:
		t.Fatalf("xrun %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("xrun %v ran past %v\nstderr:\n%s", args, limit, r.Stderr)
	}
	return r
}

// Expect fails t at once unless r exited with code (printing both
// outputs), and reports each of stderrHas that r's stderr lacks.
func Expect(t testing.TB, r Result, code int, stderrHas ...string) {
	t.Helper()
	if r.Code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, code, r.Stdout, r.Stderr)
	}
	for _, s := range stderrHas {
		if !strings.Contains(r.Stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r.Stderr)
		}
	}
}
