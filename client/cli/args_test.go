package cli

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/contract"
)

func TestFlagsFirst(t *testing.T) {
	app := NewApp(io.Discard, io.Discard, func(string) string { return "" }).Command()
	for _, tc := range []struct{ in, want string }{
		{"xrun results 3fa1 --markdown", "xrun results --markdown 3fa1"},
		{"xrun logs 3fa1 -f", "xrun logs -f 3fa1"},
		// a flag with a value keeps it, in either spelling
		{"xrun submit exp --gpus 2 --detach", "xrun submit --gpus 2 --detach exp"},
		{"xrun submit exp --gpus=2 -e FOO", "xrun submit --gpus=2 -e FOO exp"},
		{"xrun submit --timeout 5m exp", "xrun submit --timeout 5m exp"},
		// "--" ends the flags
		{"xrun rm a -- -b --force", "xrun rm a -- -b --force"},
		{"xrun rm a --force -- -b", "xrun rm --force a -- -b"},
		// nothing to move, or no command
		{"xrun ps -a", "xrun ps -a"},
		{"xrun --version", "xrun --version"},
		{"xrun nosuch a --x", "xrun nosuch a --x"},
		// a value flag at the very end stays a flag (the parser reports it)
		{"xrun submit exp --gpus", "xrun submit --gpus exp"},
		// a command with subcommands: the named subcommand's flags, else its own
		{"xrun history gla --impl a --csv", "xrun history --impl a --csv gla"},
		{"xrun history import dir --json", "xrun history import --json dir"},
		{"xrun history accept 3fa1 --note ok --case T=1", "xrun history accept --note ok --case T=1 3fa1"},
	} {
		got := strings.Join(flagsFirst(app, strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("flagsFirst(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	in := strings.Fields("xrun results 3fa1 --json")
	keep := slices.Clone(in)
	flagsFirst(app, in)
	if !slices.Equal(in, keep) {
		t.Errorf("flagsFirst changed its argument: %q", in)
	}
}

// A flag after the job id is read as a flag, not as a second job id.
func TestFlagAfterJobID(t *testing.T) {
	var out, errw bytes.Buffer
	dir := t.TempDir()
	getenv := func(k string) string {
		if k == "XDG_DATA_HOME" {
			return dir
		}
		return ""
	}
	code := Main(context.Background(), []string{"xrun", "results", "0123abcd", "--markdown"}, &out, &errw, getenv)
	if code == 0 || strings.Contains(errw.String(), "got 2 arguments") || !strings.Contains(errw.String(), "0123abcd") {
		t.Fatalf("exit %d, stderr %q: want the unknown job named, not an argument count", code, errw.String())
	}
}

func TestSubmitFlagValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "-1s"}, "--timeout -1s: give a duration > 0"},
		{[]string{"--env", "BAD NAME=1"}, `--env "BAD NAME=1": give NAME or NAME=value`},
		{[]string{"--env", "1X=1"}, `--env "1X=1"`},
		{[]string{"--env", "XRUN_TEST_UNSET_VAR"}, "--env XRUN_TEST_UNSET_VAR: the variable is not set in this shell"},
	} {
		ta := newTestApp(t)
		dir := experiment(t, ta)
		code := ta.run(context.Background(), append(append([]string{"submit", "--cpu"}, c.args...), dir)...)
		if code != contract.ExitUsage || !strings.Contains(ta.err.String(), c.want) || len(ta.fake.BuildFiles) != 0 {
			t.Errorf("%v: exit %d, %d builds, stderr %q; want %d and %q before a build", c.args, code, len(ta.fake.BuildFiles), ta.err.String(), contract.ExitUsage, c.want)
		}
	}
}
