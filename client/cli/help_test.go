package cli

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// helpLine returns the line of xrun args... --help that describes flag.
func helpLine(t *testing.T, flag string, args ...string) string {
	t.Helper()
	ta := newTestApp(t)
	if code := ta.run(context.Background(), append(args, "--help")...); code != 0 {
		t.Fatalf("%v --help: exit %d: %s", args, code, ta.err)
	}
	for _, l := range strings.Split(ta.out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), flag+" ") {
			return strings.Join(strings.Fields(l), " ")
		}
	}
	t.Fatalf("%v --help has no %s:\n%s", args, flag, ta.out)
	return ""
}

func TestFlagHelp(t *testing.T) {
	tests := []struct {
		args []string
		flag string
		want string
	}{
		{[]string{"submit"}, "--timeout", "--timeout value stop the job after this long (default: resources.timeout) [$XRUN_TIMEOUT]"},
		{[]string{"submit"}, "--env", "--env value, -e value [ --env value, -e value ] pass host variable NAME (or NAME=value) to the job at run time, added to the spec's env list"},
		{[]string{"run"}, "--python", "--python value Python interpreter for the harness (the one picked is logged as python: PATH) (default: the first of python3, /usr/bin/python3, /usr/local/bin/python3, /opt/conda/bin/python3, python that imports numpy) [$XRUN_PYTHON]"},
	}
	for _, tt := range tests {
		if got := helpLine(t, tt.flag, tt.args...); got != tt.want {
			t.Errorf("xrun %v --help, %s:\n got %s\nwant %s", tt.args, tt.flag, got, tt.want)
		}
	}
}

// xrun --version, -v and xrun version print one format.
func TestVersionFormats(t *testing.T) {
	var outs []string
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		ta := newTestApp(t)
		if code := ta.run(context.Background(), args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, ta.err)
		}
		outs = append(outs, ta.out.String())
	}
	if !strings.HasPrefix(outs[0], "xrun ") || outs[1] != outs[0] || outs[2] != outs[0] {
		t.Errorf("version formats differ: %q", outs)
	}
	ta := newTestApp(t)
	if code := ta.run(context.Background(), "bogus"); code != contract.ExitUsage || !strings.Contains(ta.err.String(), `"bogus" is not an xrun command`) {
		t.Errorf("xrun bogus: exit %d, %s", code, ta.err)
	}
	// A typo of a command gets the command it was meant to be.
	if code := ta.run(context.Background(), "sumbit"); code != contract.ExitUsage || !strings.Contains(ta.err.String(), `"sumbit" is not an xrun command: did you mean "submit"?`) {
		t.Errorf("sumbit: exit %d, %s", code, ta.err)
	}
}

// ps with nothing to list says so to a person; a script gets the header,
// and --json an empty list.
func TestPsEmpty(t *testing.T) {
	ta := newTestApp(t)
	ta.OutTerminal = true
	if code := ta.run(context.Background(), "ps"); code != 0 || ta.out.String() != "no running jobs (xrun ps --all lists finished ones)\n" {
		t.Errorf("ps on a terminal: exit %d, %q", code, ta.out)
	}
	if code := ta.run(context.Background(), "ps", "--json"); code != 0 || strings.TrimSpace(ta.out.String()) != "[]" {
		t.Errorf("ps --json: exit %d, %q", code, ta.out)
	}
	ta.OutTerminal = false
	if code := ta.run(context.Background(), "ps"); code != 0 || !strings.HasPrefix(ta.out.String(), "JOB ID") {
		t.Errorf("ps to a pipe: exit %d, %q", code, ta.out)
	}
}

// A job records who submitted it; ps shows the owner, and rm and cancel
// of another user's job need --force.
func TestOwner(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = enginetest.Succeed("my-kernel")
	ctx := context.Background()
	if code := ta.run(ctx, "submit", "-q", "-d", "--cpu", dir); code != 0 {
		t.Fatal(ta.err)
	}
	id := strings.TrimSpace(ta.out.String())
	st, _ := ta.Store()
	j, err := st.Load(id)
	if err != nil || j.Owner != store.CurrentUser() || j.Owner == "" {
		t.Fatalf("owner %q, want %q (%v)", j.Owner, store.CurrentUser(), err)
	}
	if c := ta.fake.Containers[j.ContainerID]; c == nil || c.C.Labels[contract.LabelOwner] != j.Owner {
		t.Errorf("container lacks the owner label")
	}
	if code := ta.run(ctx, "ps", "--all"); code != 0 || !strings.Contains(ta.out.String(), "OWNER") || !strings.Contains(ta.out.String(), " "+j.Owner+" ") {
		t.Errorf("ps --all:\n%s", ta.out)
	}
	j.Owner = "someone-else"
	if err := st.Save(j); err != nil {
		t.Fatal(err)
	}
	want := "xrun: job " + id + " is someone-else's, not yours (" + store.CurrentUser() + "): xrun cancel --force " + id + " to cancel it anyway\n"
	if code := ta.run(ctx, "cancel", id); code != contract.ExitUsage || ta.err.String() != want {
		t.Errorf("cancel: exit %d, %q, want %q", code, ta.err, want)
	}
	if code := ta.run(ctx, "rm", id); code != contract.ExitUsage || !strings.Contains(ta.err.String(), "xrun rm --force "+id+" to remove it anyway") {
		t.Errorf("rm: exit %d, %s", code, ta.err)
	}
	// Nor can a command run in another user's job (xrun exec).
	if code := ta.run(ctx, "exec", id, "--", "true"); code != contract.ExitUsage || !strings.Contains(ta.err.String(), "xrun exec --force "+id+" to exec it anyway") ||
		len(ta.fake.Execs) != 0 {
		t.Errorf("exec: exit %d, %s (%d commands ran)", code, ta.err, len(ta.fake.Execs))
	}
	if code := ta.run(ctx, "cancel", "--force", id); code != 0 {
		t.Errorf("cancel --force: exit %d, %s", code, ta.err)
	}
	if code := ta.run(ctx, "rm", "--force", id); code != 0 {
		t.Errorf("rm --force: exit %d, %s", code, ta.err)
	}
}

// rm --finished removes the user's finished jobs (older than --older-than),
// with --dry-run naming them only, and a summary line on stderr.
func TestRmFinished(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = enginetest.Succeed("my-kernel")
	ctx := context.Background()
	var ids []string
	for range 3 {
		if code := ta.run(ctx, "submit", "-q", "--cpu", dir); code != 0 {
			t.Fatal(ta.err)
		}
		ids = append(ids, strings.Fields(ta.out.String())[0])
	}
	st, _ := ta.Store()
	old := time.Now().Add(-100 * time.Hour)
	for i, id := range ids[:2] {
		j, _ := st.Load(id)
		j.Finished = &old
		if i == 1 {
			j.Owner = "someone-else"
		}
		st.Save(j)
	}
	if code := ta.run(ctx, "rm", "--finished", "--older-than", "72h", "--dry-run"); code != 0 || !strings.HasPrefix(ta.out.String(), ids[0]+"  my-kernel  succeeded  ended 4 days ago") || strings.Count(ta.out.String(), "\n") != 1 || ta.err.String() != "would remove 1 of 3 jobs (dry run: none removed)\n" {
		t.Errorf("dry run: exit %d, out %q, err %q", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "rm", "--finished", "--older-than", "72h"); code != 0 || ta.out.String() != ids[0]+"\n" || ta.err.String() != "removed 1 of 3 jobs; 2 left\n" {
		t.Errorf("rm --finished: exit %d, out %q, err %q", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "rm", "--finished", "--all-users"); code != 0 || ta.err.String() != "removed 2 of 2 jobs; 0 left\n" {
		t.Errorf("rm --finished --all-users: exit %d, out %q, err %q", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "rm", "--dry-run", ids[0]); code != contract.ExitUsage {
		t.Errorf("--dry-run without --finished: exit %d", code)
	}
}

// An attached submit whose stdout loses its reader leaves the job running,
// says so once on stderr and exits 0.
func TestSubmitStdoutClosed(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Hang: true} }
	closed := make(chan struct{})
	close(closed)
	ta.StdoutClosed = func() <-chan struct{} { return closed }
	code := ta.run(context.Background(), "submit", "--cpu", dir)
	st, _ := ta.Store()
	list, _ := st.List()
	if code != 0 || len(list) != 1 || list[0].Status != "running" {
		t.Fatalf("exit %d, jobs %v: %s", code, list, ta.err)
	}
	id := list[0].ID
	want := "xrun: stdout was closed: job " + id + " goes on detached; follow it with xrun logs -f " + id + "\n"
	if !strings.HasSuffix(ta.err.String(), want) || strings.Count(ta.err.String(), "stdout was closed") != 1 {
		t.Errorf("stderr %q lacks %q", ta.err, want)
	}
	if len(ta.fake.Containers) != 1 || ta.fake.Stops != 0 {
		t.Errorf("the job was stopped or removed")
	}
}

// ps -q prints the ids alone, for scripts; nothing when there are none.
func TestPsQuiet(t *testing.T) {
	ta := newTestApp(t)
	ta.OutTerminal = true
	if code := ta.run(context.Background(), "ps", "-q"); code != 0 || ta.out.Len() != 0 {
		t.Errorf("ps -q with no jobs: exit %d, %q", code, ta.out)
	}
	dir := experiment(t, ta)
	ta.fake.Behave = enginetest.Succeed("my-kernel")
	if code := ta.run(context.Background(), "submit", "-q", "--cpu", dir); code != 0 {
		t.Fatal(ta.err)
	}
	id := strings.Fields(ta.out.String())[0]
	if code := ta.run(context.Background(), "ps", "-a", "-q"); code != 0 || ta.out.String() != id+"\n" {
		t.Errorf("ps -a -q: exit %d, %q", code, ta.out)
	}
}

// The help's defaults read as a person writes them: no "(default: false)"
// on a switch, no "1h0m0s".
func TestHelpDefaultsReadable(t *testing.T) {
	ta := newTestApp(t)
	var all strings.Builder
	if code := ta.run(context.Background(), "--help"); code != 0 {
		t.Fatal(ta.err)
	}
	all.WriteString(ta.out.String())
	for _, cmd := range ta.App.Command().Commands {
		if code := ta.run(context.Background(), cmd.Name, "--help"); code != 0 {
			t.Fatalf("%s --help: %s", cmd.Name, ta.err)
		}
		all.WriteString(ta.out.String())
	}
	for _, bad := range []string{"(default: false)", "m0s)"} {
		if strings.Contains(all.String(), bad) {
			t.Errorf("the help says %q", bad)
		}
	}
	if !strings.Contains(all.String(), "(default: 1h)") {
		t.Error("prune's --older-than default is not 1h")
	}
}

// Another user's job found on the shared host, not in this store: a
// refused cancel or exec records nothing of it here.
func TestRefusedCommandAdoptsNothing(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Hang: true} }
	ctx := context.Background()
	if code := ta.run(ctx, "submit", "-q", "-d", "--cpu", dir); code != 0 {
		t.Fatal(ta.err)
	}
	id := strings.TrimSpace(ta.out.String())
	st, _ := ta.Store()
	j, err := st.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	ta.fake.Containers[j.ContainerID].C.Labels[contract.LabelOwner] = "mallory"
	if err := os.RemoveAll(st.Dir(id)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"cancel", id}, {"exec", id, "--", "true"}} {
		if code := ta.run(ctx, args...); code != contract.ExitUsage || !strings.Contains(ta.err.String(), "is mallory's, not yours") {
			t.Errorf("%s: exit %d, %s", args[0], code, ta.err)
		}
		if _, err := st.Load(id); err == nil {
			t.Errorf("%s: the refused command recorded mallory's job in this store", args[0])
		}
	}
	if len(ta.fake.Execs) != 0 {
		t.Errorf("%d commands ran in mallory's job", len(ta.fake.Execs))
	}
}
