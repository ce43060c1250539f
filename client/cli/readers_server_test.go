package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/server"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// serverRuns are finished jobs of one experiment (the repository's
// results, each with its job id), enough for the rule to judge the
// last of them, and a failed one.
var serverRuns = []string{
	"2026-11-26-h100-autograd-cache/machine-a/cold-noaot",
	"2026-11-26-h100-autograd-cache/machine-a/volume1",
	"2026-11-26-h100-autograd-cache/machine-a/volume2",
	"2026-11-26-h100-autograd-cache/machine-a/volume-noaot",
	"2026-11-26-h100-autograd-cache/machine-b/cold",
	"2026-11-26-h100-autograd-cache/machine-b/cold-aot-on",
	"2026-11-26-h100-autograd-cache/machine-b/volume1",
	"2026-11-26-h100-autograd-cache/machine-b/volume2",
	"2026-11-26-h100-autograd-cache/machine-b/volume3",
	"2026-11-26-h100-zygote-dynamo/first",
	"2026-11-26-h100-zygote-dynamo/second",
	"2026-11-26-h100-zygote-dynamo/third",
	"2026-11-24-h100-xrun-submit",
}

// The readers print the same bytes from a server as from this machine's
// store and history holding the same runs: results, compare and regress
// in each of their forms. The jobs reach the server as they do from a
// runner: posted (xrun history push).
func TestReadersFromServer(t *testing.T) {
	testReadersFromServer(t, newPushFixture(t))
}

func testReadersFromServer(t *testing.T, f *pushFixture) {
	ids := map[string]string{}
	for _, dir := range serverRuns {
		src := filepath.Join("..", "..", "experiments", "058-projection-chain-backward", "results", dir, "results.json")
		r, err := result.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		f.addJob(t, r.JobID, r.Status, src)
		ids[dir] = r.JobID
	}
	f.env["XRUN_POST_TOKEN"] = f.post
	ctx := context.Background()
	if code := f.ta.run(ctx, "history", "push", "--server", f.srv.URL); code != 0 {
		t.Fatalf("push: %s", f.ta.err)
	}
	read, err := server.NewToken(f.h, "reader", server.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}
	f.env[EnvServerToken] = read
	local := filepath.Join(t.TempDir(), "local.db")
	last := ids["2026-11-26-h100-zygote-dynamo/third"]
	failed := ids["2026-11-24-h100-xrun-submit"]
	first, second := ids["2026-11-26-h100-zygote-dynamo/first"], ids["2026-11-26-h100-zygote-dynamo/second"]
	for _, args := range [][]string{
		{"results", last},
		{"results", "--json", last},
		{"results", "--markdown", last},
		{"results", "--csv", last},
		{"results", failed},
		{"results", last[:6]},
		{"compare", first, second, last},
		{"compare", "--json", first, last},
		{"compare", "--markdown", second, last},
		{"regress", "--history", local},
		{"regress", "--history", local, "--all", last},
		{"regress", "--history", local, "--json", last, failed},
		{"regress", "--history", local, "--markdown", "--window", "5", "--min-history", "3", last},
		{"regress", "--history", local, last[:5]},
	} {
		wantCode := f.ta.run(ctx, args...)
		want, wantErr := f.ta.out.String(), f.ta.err.String()
		if len(want) < 200 {
			t.Fatalf("%v printed %q (exit %d): %s", args, want, wantCode, wantErr)
		}
		remote := append([]string{args[0], "--server", f.srv.URL}, args[1:]...)
		code := f.ta.run(ctx, remote...)
		if got := f.ta.out.String(); got != want || code != wantCode {
			t.Errorf("%v printed (exit %d)\n%s\nthis machine's store printed (exit %d)\n%s\nstderr: %s", remote, code, got, wantCode, want, f.ta.err)
		}
		if strings.Contains(f.ta.err.String(), read) {
			t.Errorf("%v showed the token: %s", remote, f.ta.err)
		}
	}
	// report writes the same files, and prints the same, from the server.
	site := filepath.Join(t.TempDir(), "site")
	for _, args := range [][]string{
		{"report", "--html", site},
		{"report", "--html", site, "--json", "--window", "5", "--min-history", "3", "projection-chain-backward"},
	} {
		wantCode := f.ta.run(ctx, args...)
		want, wantFiles := f.ta.out.String(), tree(t, site)
		if wantCode != 0 || len(wantFiles) < 10 {
			t.Fatalf("%v: exit %d, %d files: %s", args, wantCode, len(wantFiles), f.ta.err)
		}
		remote := append([]string{args[0], "--server", f.srv.URL}, args[1:]...)
		code := f.ta.run(ctx, remote...)
		if got := f.ta.out.String(); got != want || code != 0 {
			t.Errorf("%v printed (exit %d)\n%s\nthis machine's store printed\n%s\nstderr: %s", remote, code, got, want, f.ta.err)
		}
		got := tree(t, site)
		for name, data := range wantFiles {
			if !bytes.Equal(got[name], data) {
				t.Errorf("%v wrote %s differently (%d bytes, the local site's %d)", remote, name, len(got[name]), len(data))
			}
		}
		if len(got) != len(wantFiles) {
			t.Errorf("%v wrote %d files, the local report %d", remote, len(got), len(wantFiles))
		}
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644)
	if code := f.ta.run(ctx, "report", "--server", f.srv.URL, "--html", other); code != contract.ExitUsage || !strings.Contains(f.ta.err.String(), "holds no site of xrun report") {
		t.Errorf("report --server into a directory of other files: exit %d, %s", code, f.ta.err)
	}
	if data, _ := os.ReadFile(filepath.Join(other, "notes.txt")); string(data) != "mine" {
		t.Errorf("report --server touched another directory's file")
	}

	// regress --json reads as the report it is, judged by the rule.
	if code := f.ta.run(ctx, "regress", "--server", f.srv.URL, "--json", last); code != 0 {
		t.Fatalf("regress --json: %s", f.ta.err)
	}
	var rep struct {
		Runs []struct {
			JobID  string         `json:"job_id"`
			Counts map[string]int `json:"counts"`
			Total  int            `json:"total"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(f.ta.out.Bytes(), &rep); err != nil || len(rep.Runs) != 1 || rep.Runs[0].JobID != last || rep.Runs[0].Total == 0 {
		t.Errorf("regress --json: %v %+v", err, rep)
	}

	// What the server cannot do, and what it does not have, is said with
	// the exit code of the user's mistake.
	plot := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"results", "no-such-job"}, "answered 404: job \"no-such-job\" is not in this server's history"},
		{[]string{"compare", first, "no-such-job"}, "answered 404"},
		{[]string{"regress", "no-such-job"}, "answered 404: job no-such-job is not in the results history"},
		{[]string{"report", "--html", t.TempDir(), "no-such-experiment"}, "answered 404: the results history has no run of [no-such-experiment]"},
		{[]string{"regress", "--confirm", last}, "--confirm reruns jobs of this machine's store"},
		{[]string{"regress", "--plot", plot, last}, "--plot draws from a local history"},
		{[]string{"regress", filepath.Join("..", "..", "experiments", "058-projection-chain-backward", "results", serverRuns[0])}, "with --server, regress judges the server's runs by job id"},
	} {
		args := append([]string{c.args[0], "--server", f.srv.URL}, c.args[1:]...)
		if code := f.ta.run(ctx, args...); code != contract.ExitUsage || !strings.Contains(f.ta.err.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want %d saying %q", args, code, f.ta.err.String(), contract.ExitUsage, c.want)
		}
	}
	if entries, _ := os.ReadDir(plot); len(entries) > 0 {
		t.Errorf("regress --plot with --server wrote %d files", len(entries))
	}

	// The read token of the config's server: for that server alone.
	delete(f.env, EnvServerToken)
	cfgDir := filepath.Join(f.env["XDG_CONFIG_HOME"], "xrun")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "read-token"), []byte(read+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte("server:\n  url: "+f.srv.URL+"\n  read_token_file: read-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := f.ta.run(ctx, "results", "--server", f.srv.URL+"/", "--json", last); code != 0 || !strings.Contains(f.ta.out.String(), last) {
		t.Errorf("results with the config's read token: exit %d, %s", code, f.ta.err)
	}
	if code := f.ta.run(ctx, "results", "--server", "http://127.0.0.1:1", last); code != contract.ExitUsage || !strings.Contains(f.ta.err.String(), "needs a read token") {
		t.Errorf("another server with the config's read token: exit %d, %s; want it refused before anything is sent", code, f.ta.err)
	}
}

// tree reads every file under dir, by its slash path.
func tree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
