//go:build integration

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/result"
)

// A user of the shared Docker socket is root on the daemon (issue 47,
// item 5): whatever they do to a job's container, the owner's results are
// the ones xrun collected when the job ended, and the POST token is not
// in what the daemon shows of the container.

// dockerSocket is the daemon the suite runs on.
const dockerSocket = "/var/run/docker.sock"

// docker runs the docker CLI as otherUser, a member of the group that may
// use the suite's daemon (as every user of a shared box is), and returns
// its combined output; a failure fails t.
func (o *other) docker(t *testing.T, args ...string) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(dockerSocket, &st); err != nil {
		t.Fatalf("the daemon's socket: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Dir = o.home
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + o.home, "USER=" + otherUser, "DOCKER_HOST=unix://" + dockerSocket}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: o.uid, Gid: o.gid, Groups: []uint32{st.Gid}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker %v as %s: %v\n%s", args, otherUser, err, out)
	}
	return string(out)
}

// forged is results.json data with the first timing divided by 1000.
func forged(t *testing.T, data []byte) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc["cases"].([]any) {
		for _, ir := range c.(map[string]any)["results"].(map[string]any) {
			if tm, ok := ir.(map[string]any)["timing"].(map[string]any); ok {
				tm["median_ms"] = tm["median_ms"].(float64) / 1000
				doc["experiment"] = "forged"
				b, err := json.Marshal(doc)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
		}
	}
	t.Fatal("no timing to forge")
	return nil
}

// Another user replaces results.json in an exited job's container: the
// owner's `xrun results` shows what xrun collected when the job ended,
// and with the store's copy gone it refuses rather than collect the
// forged one. A change to the store's copy itself is caught by the digest
// recorded with the job's end.
func TestHostileOwnersForgedResults(t *testing.T) {
	o := asOther(t)
	r := submit(t, 5*time.Minute, "quick", "--json", "--keep")
	expect(t, r, 0)
	id := xruntest.JobID(t, r)
	s := x.Status(t, id)
	stored := filepath.Join(s.StoreDir, result.FileName)
	original, err := os.ReadFile(stored)
	if err != nil {
		t.Fatal(err)
	}
	fake := forged(t, original)

	// The forgery, by the other user through the socket.
	dir, err := os.MkdirTemp("", "xrun-forge-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, result.FileName), fake, 0o644); err != nil {
		t.Fatal(err)
	}
	container := "xrun-e2e-quick-" + id
	o.docker(t, "cp", filepath.Join(dir, result.FileName), container+":/xrun/out/"+result.FileName)
	landed := dockerCLI(t, "cp", container+":/xrun/out/"+result.FileName, "-")
	if !strings.Contains(landed, `"forged"`) {
		t.Fatalf("the forgery did not land in the container:\n%.300s", landed)
	}

	shown := x.Run(t, time.Minute, "results", "--json", id)
	expect(t, shown, 0)
	if shown.Stdout != string(original) {
		t.Errorf("xrun results shows other results than those collected when the job ended:\n%.300s", shown.Stdout)
	}
	if st := x.Status(t, id); st.Status != result.StatusSucceeded {
		t.Errorf("the job's record changed: %+v", st)
	}

	// (b) The store's copy changed: refused, naming the job and the copy.
	if err := os.WriteFile(stored, fake, 0o644); err != nil {
		t.Fatal(err)
	}
	refused := x.Run(t, time.Minute, "results", id)
	want := fmt.Sprintf("the results of job %s were changed after the job ended: the recorded copy, %s, no longer matches", id, stored)
	if refused.Code != 4 || !strings.Contains(refused.Stderr, want) || strings.Contains(refused.Stdout, "forged") {
		t.Errorf("results of a changed store copy: exit %d, want 4 and %q\nstdout:\n%s\nstderr:\n%s", refused.Code, want, refused.Stdout, refused.Stderr)
	}
	cmp := x.Run(t, time.Minute, "compare", id, id)
	if cmp.Code != 4 || !strings.Contains(cmp.Stderr, want) {
		t.Errorf("compare of a changed store copy: exit %d, want 4 and %q\nstderr:\n%s", cmp.Code, want, cmp.Stderr)
	}
	// The HTML report, of every experiment of the history, is written,
	// with the job's page and the index leaving the changed copy out
	// (its experiment reads "forged") and a warning that says why.
	site := filepath.Join(t.TempDir(), "site")
	rep := x.Run(t, 5*time.Minute, "report", "--html", site)
	if rep.Code != 0 || !strings.Contains(rep.Stderr, want) {
		t.Errorf("report of a changed store copy: exit %d, want 0 and a warning %q\nstderr:\n%s", rep.Code, want, rep.Stderr)
	}
	filepath.WalkDir(site, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte("forged")) {
				t.Errorf("the report's %s shows the changed copy", path)
			}
		}
		return nil
	})

	// The store's copy gone: the forged container is not read again.
	if err := os.Remove(stored); err != nil {
		t.Fatal(err)
	}
	gone := x.Run(t, time.Minute, "results", "--json", id)
	wantGone := fmt.Sprintf("the results of job %s were removed after the job ended: the recorded copy, %s, is gone", id, stored)
	if gone.Code != 4 || !strings.Contains(gone.Stderr, wantGone) || strings.Contains(gone.Stdout, "forged") {
		t.Errorf("results with the store's copy gone: exit %d, want 4 and %q\nstdout:\n%.300s\nstderr:\n%s", gone.Code, wantGone, gone.Stdout, gone.Stderr)
	}
	if b, err := os.ReadFile(stored); err == nil && bytes.Contains(b, []byte(`"forged"`)) {
		t.Error("the forged results were collected into the store")
	}
	expect(t, x.Run(t, time.Minute, "rm", id), 0)
}

// Another user inspects a running job's container: the POST token is
// nowhere in it, and the runner still posts with it.
func TestHostileOwnersTokenNotInspectable(t *testing.T) {
	o := asOther(t)
	ps := startPostServer(t)
	token := fmt.Sprintf("secret-%d", time.Now().UnixNano())
	r := x.RunEnv(t, 5*time.Minute, []string{"XRUN_POST_URL=" + ps.url, "XRUN_POST_TOKEN=" + token},
		"submit", "--json", "-d", "--cpu", "--base", Base, "--label", labelArg, fixturePath("pause"))
	expect(t, r, 0)
	id := xruntest.JobID(t, r)
	waitRunning(t, id)
	container := "xrun-e2e-pause-" + id
	seen := o.docker(t, "inspect", container)
	if !strings.Contains(seen, `"Running": true`) {
		t.Errorf("the container was not running when inspected:\n%.2000s", seen)
	}
	if strings.Contains(seen, token) {
		t.Error("docker inspect of the running job's container shows the POST token")
	}
	if !strings.Contains(seen, "XRUN_POST_URL="+ps.url) {
		t.Errorf("docker inspect does not show the job's XRUN_POST_URL: the inspection saw another container")
	}
	expect(t, x.Run(t, 5*time.Minute, "wait", id), 0)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	posted := false
	for _, q := range ps.reqs {
		var rs result.Results
		if q.Path == "/results" && q.Auth == "Bearer "+token && json.Unmarshal([]byte(q.Body), &rs) == nil && rs.JobID == id {
			posted = true
		}
	}
	if !posted {
		t.Errorf("the runner did not post the results of job %s with the token: %+v", id, ps.reqs)
	}
	x.Run(t, time.Minute, "rm", "-f", id)
}
