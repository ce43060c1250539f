package cli

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/server"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/post"
	"github.com/xrun-dev/xrun/result"
)

// pushFixture is a job store with finished jobs (real results.json of
// the repository's experiments) and a real xrun serve on SQLite.
type pushFixture struct {
	ta   *testApp
	h    *history.Store
	srv  *httptest.Server
	post string
	env  map[string]string
}

func newPushFixture(t *testing.T) *pushFixture {
	t.Helper()
	return newPushFixtureAt(t, filepath.Join(t.TempDir(), history.FileName))
}

// newPushFixtureAt is newPushFixture with the server's history at db (an
// SQLite file or a PostgreSQL URL).
func newPushFixtureAt(t *testing.T, db string) *pushFixture {
	t.Helper()
	h, err := history.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	post, err := server.NewToken(h, "runners", server.ScopePost)
	if err != nil {
		t.Fatal(err)
	}
	f := &pushFixture{ta: newTestApp(t), h: h, post: post, env: map[string]string{"XDG_CONFIG_HOME": t.TempDir()}}
	f.srv = httptest.NewServer(server.New(h, server.Options{}))
	t.Cleanup(f.srv.Close)
	f.ta.Getenv = func(k string) string { return f.env[k] }
	return f
}

// addJob records a job of status with the results.json at src (none
// when empty) in the store, under the results' job id.
func (f *pushFixture) addJob(t *testing.T, id, status, src string) {
	t.Helper()
	st, err := f.ta.Store()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Create(&store.Job{ID: id, Experiment: "exp-" + id, Status: status}); err != nil {
		t.Fatal(err)
	}
	if src != "" {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.WriteFile(id, store.ResultsFile, data); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *pushFixture) runsOf(t *testing.T, id string) int {
	t.Helper()
	runs, err := f.h.RunsOfJob(id)
	if err != nil {
		t.Fatal(err)
	}
	return len(runs)
}

const zygote = "../../experiments/058-projection-chain-backward/results/2026-11-26-h100-zygote-dynamo/"

// push sends the finished jobs the server lacks, once: a second push
// sends nothing, a job still running or without results is left alone,
// and every job is on the server exactly once.
func TestHistoryPush(t *testing.T) {
	f := newPushFixture(t)
	ctx := context.Background()
	f.addJob(t, "68528256c17d", result.StatusSucceeded, zygote+"first/results.json")
	f.addJob(t, "1c64a7c95c08", result.StatusSucceeded, zygote+"second/results.json")
	f.addJob(t, "eb29cc96359a", result.StatusSucceeded, zygote+"third/results.json")
	f.addJob(t, "507ba688d810", result.StatusRunning, "../../experiments/058-projection-chain-backward/results/2026-11-24-h100-xrun-submit/results.json")
	f.addJob(t, "0000deadbeef", result.StatusFailed, "")
	// The runner of the first reached the server.
	data, _ := os.ReadFile(zygote + "first/results.json")
	if err := post.Post(ctx, f.srv.URL+server.ResultsPath, f.post, data, post.Options{}); err != nil {
		t.Fatal(err)
	}

	// The config's server and token.
	cfgDir := filepath.Join(f.env["XDG_CONFIG_HOME"], "xrun")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte("server:\n  url: "+f.srv.URL+"\n  token: "+f.post+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := f.ta.run(ctx, "history", "push"); code != 0 {
		t.Fatalf("history push: exit %d\n%s", code, f.ta.err)
	}
	errText := f.ta.err.String()
	for _, want := range []string{"[1/2] job 1c64a7c95c08 (exp-1c64a7c95c08): pushed", "[2/2] job eb29cc96359a (exp-eb29cc96359a): pushed",
		"pushed 2 jobs to " + f.srv.URL + "; 1 of the store's 3 finished jobs with results was there already"} {
		if !strings.Contains(errText, want) {
			t.Errorf("history push's stderr lacks %q:\n%s", want, errText)
		}
	}
	if strings.Contains(errText+f.ta.out.String(), f.post) {
		t.Error("history push showed the token")
	}
	for id, want := range map[string]int{"68528256c17d": 1, "1c64a7c95c08": 1, "eb29cc96359a": 1, "507ba688d810": 0} {
		if got := f.runsOf(t, id); got != want {
			t.Errorf("the server has %d runs of job %s, want %d", got, id, want)
		}
	}

	// Again: nothing to send.
	if code := f.ta.run(ctx, "history", "push", "--json"); code != 0 {
		t.Fatalf("history push --json: exit %d\n%s", code, f.ta.err)
	}
	var rep pushReport
	if err := json.Unmarshal(f.ta.out.Bytes(), &rep); err != nil {
		t.Fatalf("history push --json printed %q: %v", f.ta.out, err)
	}
	if rep.Jobs != 3 || rep.Present != 3 || len(rep.Pushed) != 0 || len(rep.Failed) != 0 || rep.Server != f.srv.URL {
		t.Errorf("a second push: %+v, want 3 jobs all present, none pushed", rep)
	}
	for _, id := range []string{"68528256c17d", "1c64a7c95c08", "eb29cc96359a"} {
		if got := f.runsOf(t, id); got != 1 {
			t.Errorf("after a second push the server has %d runs of job %s, want 1", got, id)
		}
	}
}

// A job the server refuses is named with the reason, the others are
// pushed, and the exit code says something was left behind; a push
// without a token, or with the config's token to another server, is
// refused before anything is sent.
func TestHistoryPushRefusals(t *testing.T) {
	f := newPushFixture(t)
	ctx := context.Background()
	f.addJob(t, "68528256c17d", result.StatusSucceeded, zygote+"first/results.json")
	f.addJob(t, "badbadbad000", result.StatusSucceeded, "")
	st, _ := f.ta.Store()
	if err := st.WriteFile("badbadbad000", store.ResultsFile, []byte(`{"schema_version": 999}`)); err != nil {
		t.Fatal(err)
	}

	if code := f.ta.run(ctx, "history", "push", "--server", f.srv.URL); code != contract.ExitUsage || !strings.Contains(f.ta.err.String(), "no post token for "+f.srv.URL+": set XRUN_POST_TOKEN") {
		t.Errorf("push without a token: exit %d, %s", code, f.ta.err)
	}
	cfgDir := filepath.Join(f.env["XDG_CONFIG_HOME"], "xrun")
	os.MkdirAll(cfgDir, 0o700)
	os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte("server:\n  url: https://xrun.lab.example\n  token: "+f.post+"\n"), 0o600)
	if code := f.ta.run(ctx, "history", "push", "--server", f.srv.URL); code != contract.ExitUsage || !strings.Contains(f.ta.err.String(), "no post token") {
		t.Errorf("push to another server than the config's, with the config's token: exit %d, %s", code, f.ta.err)
	}

	f.env["XRUN_POST_TOKEN"] = f.post
	start := time.Now()
	code := f.ta.run(ctx, "history", "push", "--server", f.srv.URL+"/")
	if code != contract.ExitInfra || !strings.Contains(f.ta.err.String(), "job badbadbad000 (exp-badbadbad000): not pushed: ") ||
		!strings.Contains(f.ta.err.String(), "answered 400") || !strings.Contains(f.ta.err.String(), "1 job could not be pushed") {
		t.Errorf("push with a refused job: exit %d\n%s", code, f.ta.err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("a refusal was retried (%s): a 400 is final", time.Since(start))
	}
	if f.runsOf(t, "68528256c17d") != 1 || f.runsOf(t, "badbadbad000") != 0 {
		t.Error("the good job was not pushed beside the refused one, or the refused one was stored")
	}

	f.srv.Close()
	if code := f.ta.run(ctx, "history", "push", "--server", f.srv.URL); code != contract.ExitInfra || !strings.Contains(f.ta.err.String(), "is xrun serve running there?") {
		t.Errorf("push to a server that is down: exit %d, %s", code, f.ta.err)
	}
}
