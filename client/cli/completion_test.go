package cli

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/engine/enginetest"
)

// complete runs xrun as the bash and zsh scripts do for the words typed
// so far (urfave/cli reads os.Args for the word being completed).
func complete(t *testing.T, ta *testApp, words ...string) []string {
	t.Helper()
	args := append(append([]string{"xrun"}, words...), "--generate-bash-completion")
	saved := os.Args
	os.Args = args
	defer func() { os.Args = saved }()
	ta.out.Reset()
	ta.err.Reset()
	if code := ta.report(ta.Command().RunContext(context.Background(), flagsFirst(ta.Command(), args))); code != 0 {
		t.Fatalf("%v: exit %d: %s", words, code, ta.err)
	}
	return strings.Fields(ta.out.String())
}

func TestCompletion(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = enginetest.Succeed("my-kernel")
	if code := ta.run(context.Background(), "submit", "-q", "-d", "--cpu", dir); code != 0 {
		t.Fatal(ta.err)
	}
	id := strings.TrimSpace(ta.out.String())
	has := func(got []string, w string) bool {
		for _, g := range got {
			if g == w {
				return true
			}
		}
		return false
	}
	// A flag being typed: the command's flags.
	for _, cmd := range []string{"logs", "rm", "submit", "run"} {
		if got := complete(t, ta, cmd, "-"); !has(got, "--help") || has(got, id) {
			t.Errorf("xrun %s -<TAB>: %v", cmd, got)
		}
	}
	if got := complete(t, ta, "logs", "-"); !has(got, "--follow") {
		t.Errorf("xrun logs -<TAB> lacks --follow: %v", got)
	}
	// A job id: the store's ids.
	if got := complete(t, ta, "logs"); len(got) != 1 || got[0] != id {
		t.Errorf("xrun logs <TAB>: %v", got)
	}
	// A directory: nothing, so the shell completes paths.
	for _, cmd := range []string{"submit", "run", "init"} {
		if got := complete(t, ta, cmd); len(got) != 0 {
			t.Errorf("xrun %s <TAB>: %v, want none (the shell's paths)", cmd, got)
		}
	}
	// The fish script names the commands' flags.
	if code := ta.run(context.Background(), "completion", "fish"); code != 0 || !strings.Contains(ta.out.String(), "__fish_seen_subcommand_from logs") {
		t.Errorf("fish: exit %d", code)
	}
}
