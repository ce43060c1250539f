//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
)

// startServe starts an xrun serve listening on the docker0 bridge, so
// that the jobs' containers reach it.
func startServe(t *testing.T) *xruntest.Server { return x.Serve(t, bridgeAddress(t)+":0") }

// A job submitted with the config's server: its runner posts its
// results there, with nothing of the server on the command line or in
// the shell; the run is on the server once, and stays once when the same
// results are posted again. The token is in neither the container's
// configuration, nor xrun's output, nor the job's logs.
func TestServeConfigPost(t *testing.T) {
	s := startServe(t)
	r := x.RunEnv(t, 8*time.Minute, s.Env(), "submit", "--json", "--cpu", "--keep", "--base", Base, "--label", labelArg, fixturePath("quick"))
	expect(t, r, 0)
	id := xruntest.JobID(t, r)

	runs := s.RunsOf(t, id)
	if len(runs) != 1 || runs[0].Experiment != "e2e-quick" || runs[0].Source != "post:runners" {
		t.Fatalf("the server's runs of job %s: %+v, want one of e2e-quick posted by token runners", id, runs)
	}
	st := x.Status(t, id)
	if code := s.PostFile(t, filepath.Join(st.StoreDir, "results.json")); code != http.StatusOK {
		t.Errorf("posting job %s's results again: %d, want 200 (replaced)", id, code)
	}
	if runs := s.RunsOf(t, id); len(runs) != 1 {
		t.Errorf("after a second post the server has %d runs of job %s, want 1: %+v", len(runs), id, runs)
	}

	if strings.Contains(r.Stdout+r.Stderr, s.Post) {
		t.Error("the post token is in xrun submit's output")
	}
	if f := storeHas(t, st.StoreDir, s.Post); len(f) > 0 {
		t.Errorf("the post token reached the job's files: %v", f)
	}
	cfg := dockerCLI(t, "inspect", "--format", "{{json .Config.Env}}", "xrun-e2e-quick-"+id)
	if strings.Contains(cfg, s.Post) {
		t.Error("the post token is in the container's configuration")
	}
	if want := "XRUN_POST_URL=" + s.Base + "/api/v1/results"; !strings.Contains(cfg, want) {
		t.Errorf("the container's environment lacks %s: %s", want, cfg)
	}
	if strings.Contains(s.Log(), s.Post) {
		t.Error("the post token is in the server's log")
	}

	// The readers print the posted job from the server as from the store.
	for _, form := range [][]string{{}, {"--json"}, {"--markdown"}, {"--csv"}} {
		args := append(append([]string{"results"}, form...), id)
		local := x.RunEnv(t, time.Minute, s.Env(), args...)
		expect(t, local, 0)
		remote := x.RunEnv(t, time.Minute, append(s.Env(), "XRUN_SERVER_TOKEN="+s.Read),
			append([]string{"results", "--server", s.Base}, append(form, id)...)...)
		expect(t, remote, 0)
		if remote.Stdout != local.Stdout || len(local.Stdout) < 100 {
			t.Errorf("results --server %v printed\n%s\nthe store's printed\n%s", form, remote.Stdout, local.Stdout)
		}
	}
}

// A job whose runner cannot reach the config's server ends as it would
// have, its results in the job store; xrun history push sends them to the
// server later, once, and a second push sends nothing.
func TestServeHistoryPush(t *testing.T) {
	s := startServe(t)
	// The config's server is a port of the bridge nothing listens on.
	ln, err := net.Listen("tcp", bridgeAddress(t)+":0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	s.SetURL(t, down)
	// A job store of its own: push sends every finished job of the store.
	env := append(s.Env(), "XDG_DATA_HOME="+t.TempDir())
	r := x.RunEnv(t, 8*time.Minute, env, "submit", "--json", "--cpu", "--base", Base, "--label", labelArg, fixturePath("quick"))
	expect(t, r, 0)
	id := xruntest.JobID(t, r)
	if runs := s.RunsOf(t, id); len(runs) != 0 {
		t.Fatalf("the server has job %s, which was posted to a closed port: %+v", id, runs)
	}

	push := func() (res, map[string]any) {
		r := x.RunEnv(t, 2*time.Minute, append(env, "XRUN_POST_TOKEN="+s.Post), "history", "push", "--server", s.Base, "--json")
		expect(t, r, 0)
		var rep map[string]any
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			t.Fatalf("history push --json printed %q: %v", r.Stdout, err)
		}
		return r, rep
	}
	r, rep := push()
	if fmt.Sprint(rep["pushed"]) != "["+id+"]" || rep["present"] != 0.0 || !strings.Contains(r.Stderr, "[1/1] job "+id+" (e2e-quick): pushed") {
		t.Errorf("history push: %v\n%s", rep, r.Stderr)
	}
	if runs := s.RunsOf(t, id); len(runs) != 1 || runs[0].Source != "post:runners" {
		t.Errorf("after history push the server's runs of job %s: %+v, want one", id, runs)
	}
	_, rep = push()
	if fmt.Sprint(rep["pushed"]) != "[]" || rep["present"] != 1.0 {
		t.Errorf("a second history push: %v, want nothing pushed", rep)
	}
	if runs := s.RunsOf(t, id); len(runs) != 1 {
		t.Errorf("after a second history push the server has %d runs of job %s, want 1", len(runs), id)
	}
}
