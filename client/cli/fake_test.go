package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
)

// testApp is an App on a fake engine with its own store and a fake runner binary.
type testApp struct {
	*App
	fake     *enginetest.Engine
	out, err *bytes.Buffer
}

// setenv makes the app see env's values for those keys, and the
// environment it had for the others.
func (ta *testApp) setenv(env map[string]string) {
	get := ta.Getenv
	ta.Getenv = func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return get(k)
	}
}

func newTestApp(t *testing.T) *testApp {
	t.Helper()
	f := enginetest.New()
	var out, errb bytes.Buffer
	runner := filepath.Join(t.TempDir(), "xrun-runner")
	if err := os.WriteFile(runner, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SECRET_TOKEN": "s3cr3t"}
	a := &App{
		Out: &out, Err: &errb,
		Getenv:    func(k string) string { return env[k] },
		Connect:   func(context.Context, connect.Selection) (engine.Engine, error) { return f, nil },
		RunnerFor: func(context.Context, string, string, func(string, ...any)) (string, error) { return runner, nil },
		StoreRoot: t.TempDir(),
	}
	return &testApp{App: a, fake: f, out: &out, err: &errb}
}

// run runs xrun with args and returns its exit code.
func (ta *testApp) run(ctx context.Context, args ...string) int {
	ta.out.Reset()
	ta.err.Reset()
	return ta.report(ta.Command().RunContext(ctx, append([]string{"xrun"}, args...)))
}
