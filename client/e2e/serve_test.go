//go:build integration

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/client/history"
)

// serveProc is an xrun serve process of the binary under test on an
// SQLite history of its own, listening on the docker0 bridge so that
// the jobs' containers reach it.
type serveProc struct {
	base      string // http://HOST:PORT
	db        string
	post      string // a post token
	read      string // a read token
	log       *syncBuffer
	cmd       *exec.Cmd
	configDir string // an XDG_CONFIG_HOME whose config's server: is this
}

var servingLine = regexp.MustCompile(`serving results history .* on (http://\S+) `)

func startServe(t *testing.T) *serveProc {
	t.Helper()
	dir := t.TempDir()
	s := &serveProc{db: filepath.Join(dir, "served.db"), log: &syncBuffer{}, configDir: filepath.Join(dir, "config")}
	token := func(name, scope string) string {
		r := x.Run(t, time.Minute, "serve", "token", "add", "--db", s.db, "--scope", scope, name)
		expect(t, r, 0)
		return strings.TrimSpace(r.Stdout)
	}
	s.post, s.read = token("runners", "post"), token("reader", "read")

	s.cmd = exec.Command(xrunBin, "serve", "--db", s.db, "--addr", bridgeAddress(t)+":0")
	s.cmd.Env = x.Env()
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.cmd.Process.Signal(os.Interrupt)
		s.cmd.Wait()
		if t.Failed() {
			t.Logf("xrun serve's log:\n%s", s.log.String())
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(s.log, sc.Text())
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case s.base = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatalf("xrun serve did not say where it serves:\n%s", s.log.String())
	}

	if err := os.MkdirAll(filepath.Join(s.configDir, "xrun"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.configDir, "xrun", "post-token"), []byte(s.post+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("server:\n  url: %s\n  token_file: post-token\n", s.base)
	if err := os.WriteFile(filepath.Join(s.configDir, "xrun", "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// env is what a submit needs to post to s through xrun's config alone:
// the config directory, and no XRUN_POST_* of the shell.
func (s *serveProc) env() []string {
	return []string{"XDG_CONFIG_HOME=" + s.configDir, "XRUN_POST_URL=", "XRUN_POST_TOKEN="}
}

// runsOf are the server's runs of job id, from GET /api/v1/runs with the
// read token.
func (s *serveProc) runsOf(t *testing.T, id string) []history.Run {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.base+"/api/v1/runs", nil)
	req.Header.Set("Authorization", "Bearer "+s.read)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/runs: %d %s", resp.StatusCode, body)
	}
	var runs, of []history.Run
	if err := json.Unmarshal(body, &runs); err != nil {
		t.Fatalf("GET /api/v1/runs: %v\n%s", err, body)
	}
	for _, r := range runs {
		if r.JobID == id {
			of = append(of, r)
		}
	}
	return of
}

// postFile posts a results.json to s with the post token, as a runner
// does, and returns the answer's status code.
func (s *serveProc) postFile(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.base+"/api/v1/results", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+s.post)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A job submitted with the config's server: its runner posts its
// results there, with nothing of the server on the command line or in
// the shell; the run is on the server once, and stays once when the same
// results are posted again. The token is in neither the container's
// configuration, nor xrun's output, nor the job's logs.
func TestServeConfigPost(t *testing.T) {
	s := startServe(t)
	r := x.RunEnv(t, 8*time.Minute, s.env(), "submit", "--json", "--cpu", "--keep", "--base", Base, "--label", labelArg, fixturePath("quick"))
	expect(t, r, 0)
	id := xruntest.JobID(t, r)

	runs := s.runsOf(t, id)
	if len(runs) != 1 || runs[0].Experiment != "e2e-quick" || runs[0].Source != "post:runners" {
		t.Fatalf("the server's runs of job %s: %+v, want one of e2e-quick posted by token runners", id, runs)
	}
	st := x.Status(t, id)
	if code := s.postFile(t, filepath.Join(st.StoreDir, "results.json")); code != http.StatusOK {
		t.Errorf("posting job %s's results again: %d, want 200 (replaced)", id, code)
	}
	if runs := s.runsOf(t, id); len(runs) != 1 {
		t.Errorf("after a second post the server has %d runs of job %s, want 1: %+v", len(runs), id, runs)
	}

	if strings.Contains(r.Stdout+r.Stderr, s.post) {
		t.Error("the post token is in xrun submit's output")
	}
	if f := storeHas(t, st.StoreDir, s.post); len(f) > 0 {
		t.Errorf("the post token reached the job's files: %v", f)
	}
	cfg := dockerCLI(t, "inspect", "--format", "{{json .Config.Env}}", "xrun-e2e-quick-"+id)
	if strings.Contains(cfg, s.post) {
		t.Error("the post token is in the container's configuration")
	}
	if want := "XRUN_POST_URL=" + s.base + "/api/v1/results"; !strings.Contains(cfg, want) {
		t.Errorf("the container's environment lacks %s: %s", want, cfg)
	}
	if strings.Contains(s.log.String(), s.post) {
		t.Error("the post token is in the server's log")
	}

	// The readers print the posted job from the server as from the store.
	for _, form := range [][]string{{}, {"--json"}, {"--markdown"}, {"--csv"}} {
		args := append(append([]string{"results"}, form...), id)
		local := x.RunEnv(t, time.Minute, s.env(), args...)
		expect(t, local, 0)
		remote := x.RunEnv(t, time.Minute, append(s.env(), "XRUN_SERVER_TOKEN="+s.read),
			append([]string{"results", "--server", s.base}, append(form, id)...)...)
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
	cfg := fmt.Sprintf("server:\n  url: %s\n  token_file: post-token\n", down)
	if err := os.WriteFile(filepath.Join(s.configDir, "xrun", "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// A job store of its own: push sends every finished job of the store.
	env := append(s.env(), "XDG_DATA_HOME="+t.TempDir())
	r := x.RunEnv(t, 8*time.Minute, env, "submit", "--json", "--cpu", "--base", Base, "--label", labelArg, fixturePath("quick"))
	expect(t, r, 0)
	id := xruntest.JobID(t, r)
	if runs := s.runsOf(t, id); len(runs) != 0 {
		t.Fatalf("the server has job %s, which was posted to a closed port: %+v", id, runs)
	}

	push := func() (res, map[string]any) {
		r := x.RunEnv(t, 2*time.Minute, append(env, "XRUN_POST_TOKEN="+s.post), "history", "push", "--server", s.base, "--json")
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
	if runs := s.runsOf(t, id); len(runs) != 1 || runs[0].Source != "post:runners" {
		t.Errorf("after history push the server's runs of job %s: %+v, want one", id, runs)
	}
	_, rep = push()
	if fmt.Sprint(rep["pushed"]) != "[]" || rep["present"] != 1.0 {
		t.Errorf("a second history push: %v, want nothing pushed", rep)
	}
	if runs := s.runsOf(t, id); len(runs) != 1 {
		t.Errorf("after a second history push the server has %d runs of job %s, want 1", len(runs), id)
	}
}
