//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// The hostile experiments (testdata/hostile/README.md) each attack the job
// they run in from a daemon that outlives its worker. Whatever they try,
// the job ends with its results intact, or truthfully failed.

// hostileJob submits a hostile experiment and returns the submit's result,
// the job's status record and its results from the store.
func hostileJob(t *testing.T, name string, code int, flags ...string) (res, xruntest.Status, *result.Results) {
	t.Helper()
	r := submit(t, 8*time.Minute, "hostile/"+name, append([]string{"--json"}, flags...)...)
	if r.Code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, code, r.Stdout, r.Stderr)
	}
	id := xruntest.JobID(t, r)
	s := x.Status(t, id)
	rs, err := result.ReadFile(filepath.Join(s.StoreDir, "results.json"))
	if err != nil {
		t.Fatalf("the store's results.json of job %s: %v", id, err)
	}
	// The store's copy and the runner's agree but for the status, which
	// the client may correct.
	runner, err := result.ReadFile(filepath.Join(s.StoreDir, "out", "results.json"))
	if err != nil {
		t.Fatalf("out/results.json of job %s: %v", id, err)
	}
	if runner.Experiment != rs.Experiment || len(runner.Cases) != len(rs.Cases) {
		t.Errorf("out/results.json (%s, %d cases) differs from the store's (%s, %d)", runner.Experiment, len(runner.Cases), rs.Experiment, len(rs.Cases))
	}
	if rs.Status != s.Status {
		t.Errorf("the record says %s, results.json %s", s.Status, rs.Status)
	}
	return r, s, rs
}

// truthful fails t for a row that claims more than it has: ok without a
// final timing, or a failure without an error.
func truthful(t *testing.T, rs *result.Results) {
	t.Helper()
	for _, c := range rs.Cases {
		for name, ir := range c.Results {
			switch ir.Status {
			case result.ImplOK:
				if ir.Timing == nil || ir.Timing.StopReason == result.StopInProgress || ir.Timing.MedianMS <= 0 {
					t.Errorf("%s at %s is ok without a final timing: %+v", name, c.Label, ir.Timing)
				}
			case result.ImplSkipped:
			default:
				if ir.Error == "" {
					t.Errorf("%s at %s is %s without an error", name, c.Label, ir.Status)
				}
			}
		}
	}
}

func hasWarning(rs *result.Results, kind string) bool {
	for _, w := range rs.Warnings {
		if w.Kind == kind {
			return true
		}
	}
	return false
}

// storeHas reports the store files of a job (under dir) that contain s.
func storeHas(t *testing.T, dir, s string) []string {
	t.Helper()
	var found []string
	filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), s) {
			found = append(found, path)
		}
		return nil
	})
	return found
}

// A daemon of the implementation rewrites, truncates, deletes and replaces
// the output directory until the job ends: none of it reaches the results.
func TestHostileTamper(t *testing.T) {
	_, s, rs := hostileJob(t, "tamper", 0)
	if s.Status != result.StatusSucceeded || rs.Experiment != "e2e-hostile-tamper" {
		t.Errorf("status %s, experiment %q", s.Status, rs.Experiment)
	}
	if f := storeHas(t, s.StoreDir, "forged"); len(f) > 0 {
		t.Errorf("forged results reached the store: %v", f)
	}
	if f := storeHas(t, s.StoreDir, "ATTACK OK"); len(f) > 0 {
		t.Errorf("an attack succeeded (the worker's log says so): %v", f)
	}
	for _, f := range []string{"runner.log", "results.md", "logs/hostile.log"} {
		if _, err := os.Stat(filepath.Join(s.StoreDir, "out", f)); err != nil {
			t.Errorf("the output directory lost %s: %v", f, err)
		}
	}
	if !hasWarning(rs, analyze.WarnStrayProcesses) {
		t.Errorf("no %s warning: %+v", analyze.WarnStrayProcesses, rs.Warnings)
	}
	truthful(t, rs)
	if c := rs.Env.Container; c == nil || c.WorkerUser != "65532:65532" {
		t.Errorf("env.container %+v: the experiment's code must run as the job user", c)
	}
}

// A fork bomb uses up the worker user's processes: the runner, root and
// apart from that limit, reaches its verdict; no row claims what it lacks.
func TestHostileForkBomb(t *testing.T) {
	r := submit(t, 16*time.Minute, "hostile/forkbomb", "--json")
	if r.Code != 0 && r.Code != 2 {
		t.Fatalf("exit %d, want 0, or 2 for implementations the bomb starved\nstderr:\n%s", r.Code, r.Stderr)
	}
	id := xruntest.JobID(t, r)
	s := x.Status(t, id)
	rs, err := result.ReadFile(filepath.Join(s.StoreDir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(filepath.Join(s.StoreDir, "logs.txt"))
	if !strings.Contains(string(log), "status: "+rs.Status) || strings.Contains(string(log), "newosproc") {
		t.Errorf("the runner did not reach its verdict:\n%s", log)
	}
	if rs.Status != s.Status || (rs.Status != result.StatusSucceeded && rs.Status != result.StatusFailed) {
		t.Errorf("record %s, results %s", s.Status, rs.Status)
	}
	bomb, _ := os.ReadFile(filepath.Join(s.StoreDir, "out", "logs", "hostile.log"))
	if !strings.Contains(string(bomb), "processes started, then") {
		t.Errorf("the fork bomb did not run into its limit: %s", bomb)
	}
	if !hasWarning(rs, analyze.WarnStrayProcesses) {
		t.Errorf("no %s warning: %+v", analyze.WarnStrayProcesses, rs.Warnings)
	}
	if c := rs.Env.Container; c == nil || c.PidsLimit != 1024 || c.WorkerProcsLimit != 1024-256 {
		t.Errorf("env.container %+v: want a pids limit of 1024 (resources.pids), 768 of them the worker user's", c)
	}
	truthful(t, rs)
}

// A worker writes to the runner's stdout, its own and the event pipe: the
// runner's stdout is out of its reach, and the rest is bounded. With
// --root (the worker is root too) the container's log floods as far as
// the daemon lets it (its log-opts), and the client still stores a bounded
// log and holds little memory (lifecycle's TestFetchOutputsBoundsAFlood
// streams a gigabyte through the same path).
func TestHostileFlood(t *testing.T) {
	r, s, rs := hostileJob(t, "flood", 0, "--env", "XRUN_FLOOD_MB=64")
	if rs.Status != result.StatusSucceeded {
		t.Errorf("status %s", rs.Status)
	}
	worker, _ := os.ReadFile(filepath.Join(s.StoreDir, "out", "logs", "hostile.log"))
	if strings.Contains(string(worker), "FLOOD OK /proc/1/fd") || !strings.Contains(string(worker), "/proc/1/fd/1: [Errno 13] Permission denied") {
		t.Errorf("the worker could write to the runner's stdout:\n%.2000s", worker)
	}
	if len(worker) > 3<<20 {
		t.Errorf("the worker's log is %d bytes, over its bound", len(worker))
	}
	logs, _ := os.ReadFile(filepath.Join(s.StoreDir, "logs.txt"))
	if len(logs) > 1<<20 || !strings.Contains(string(logs), "further messages of this worker are dropped") {
		t.Errorf("the job's log is %d bytes, or lacks the dropped-messages line", len(logs))
	}
	t.Logf("unprivileged flood: job log %d bytes, worker log %d bytes, client peak RSS %d MiB", len(logs), len(worker), r.MaxRSSBytes>>20)

	r, s, _ = hostileJob(t, "flood", 0, "--root", "--env", "XRUN_FLOOD_MB=256")
	logs, _ = os.ReadFile(filepath.Join(s.StoreDir, "logs.txt"))
	if int64(len(logs)) > store.LogHeadBytes+store.LogTailBytes+4096 || !strings.Contains(string(logs), "bytes of output dropped here") {
		t.Errorf("the stored log of a flooded container is %d bytes, or lacks the dropped line", len(logs))
	}
	if !strings.Contains(string(logs), "status: succeeded") {
		t.Error("the stored log lost its end (the runner's last lines)")
	}
	t.Logf("--root flood (512 MiB into the container's log): stored log %d bytes, client peak RSS %d MiB", len(logs), r.MaxRSSBytes>>20)
	if r.MaxRSSBytes > 200<<20 {
		t.Errorf("xrun submit held %d MiB while following and storing the flood", r.MaxRSSBytes>>20)
	}
	w := x.Run(t, 5*time.Minute, "logs", xruntest.JobID(t, r))
	if w.Code != 0 || w.MaxRSSBytes > 200<<20 {
		t.Errorf("xrun logs of the flood: exit %d, peak RSS %d MiB", w.Code, w.MaxRSSBytes>>20)
	}
}

// postServer records every request it gets; the container reaches it at
// the address of the host's docker0 bridge.
type postServer struct {
	mu   sync.Mutex
	reqs []postRequest
	url  string
}

type postRequest struct {
	Path, Auth, Body string
}

func startPostServer(t *testing.T) *postServer {
	t.Helper()
	host := bridgeAddress(t)
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	ps := &postServer{url: "http://" + ln.Addr().String() + "/results"}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		ps.mu.Lock()
		ps.reqs = append(ps.reqs, postRequest{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: string(b)})
		ps.mu.Unlock()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ps
}

// bridgeAddress is this host's address on the docker0 bridge
// (xruntest.BridgeAddress).
func bridgeAddress(t *testing.T) string { return xruntest.BridgeAddress(t) }

// The worker hunts for the POST token: in every process's environment
// (the runner's too), in the runner's directory, in its own environment.
// It finds nothing; the runner still posts with it; the container's
// configuration does not show it.
func TestHostileTokenHunt(t *testing.T) {
	ps := startPostServer(t)
	token := fmt.Sprintf("secret-%d", time.Now().UnixNano())
	r := submitWithEnv(t, "hostile/token", "XRUN_POST_URL="+ps.url, "XRUN_POST_TOKEN="+token)
	tokenHeld(t, ps, token, r)
}

// The same hunt in a job run in a standby, which was handed the token and
// the go file (the code hash, in /xrun/runner) by a copy into the running
// container rather than at its creation.
func TestHostileTokenHuntInStandby(t *testing.T) {
	ps := startPostServer(t)
	token := fmt.Sprintf("secret-%d", time.Now().UnixNano())
	env := append([]string{"XRUN_POST_URL=" + ps.url, "XRUN_POST_TOKEN=" + token}, standbyOn...)
	first := submitWithEnv(t, "hostile/token", env...)
	expect(t, first, 0)
	r := submitWithEnv(t, "hostile/token", env...)
	if !strings.Contains(r.Stderr, "standby: waited") {
		t.Fatalf("the second submit did not run in the standby:\n%s", r.Stderr)
	}
	tokenHeld(t, ps, token, r)
	for _, n := range waitingStandbys(t, "e2e-hostile-token") {
		dockerCLI(t, "rm", "-f", n)
	}
}

// tokenHeld fails t unless submit r's job, whose worker hunted for token,
// ended well without finding it, and the runner posted its results to ps
// with it.
func tokenHeld(t *testing.T, ps *postServer, token string, r res) {
	t.Helper()
	expect(t, r, 0)
	id := xruntest.JobID(t, r)
	s := x.Status(t, id)
	if f := storeHas(t, s.StoreDir, token); len(f) > 0 {
		t.Errorf("the token reached the job's files: %v", f)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	posted := false
	for _, q := range ps.reqs {
		switch {
		case q.Path == "/results/leak" || strings.Contains(q.Body, token):
			t.Errorf("the worker sent the token: %+v", q)
		case q.Path == "/results" && q.Auth == "Bearer "+token:
			var rs result.Results
			posted = posted || json.Unmarshal([]byte(q.Body), &rs) == nil && rs.JobID == id
		}
	}
	if !posted {
		t.Errorf("the runner did not post the results of job %s with the token: %+v", id, ps.reqs)
	}
	cfg := dockerCLI(t, "inspect", "--format", "{{json .Config.Env}}", "xrun-e2e-hostile-token-"+id)
	if strings.Contains(cfg, token) {
		t.Error("the token is in the container's configuration")
	}
	hunt, _ := os.ReadFile(filepath.Join(s.StoreDir, "out", "logs", "hostile.log"))
	if !strings.Contains(string(hunt), "/proc/1/environ") {
		t.Errorf("the hunt did not try the runner's environment:\n%s", hunt)
	}
	if !strings.Contains(string(hunt), contract.PostTokenFile+": [Errno 13] Permission denied") {
		t.Errorf("the hunt did not meet the runner's token file, unreadable:\n%s", hunt)
	}
}

// submitWithEnv submits fixture (--json) with extra environment variables
// set.
func submitWithEnv(t *testing.T, fixture string, extra ...string) res {
	t.Helper()
	args := []string{"submit", "--json", "--cpu", "--keep", "--base", Base, "--label", labelArg, fixturePath(fixture)}
	return x.RunEnv(t, 8*time.Minute, extra, args...)
}
