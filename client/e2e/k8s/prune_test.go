//go:build integration

package k8s

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
)

var pushLine = regexp.MustCompile(`pushing (\S+)`)

// manifestStatus is the registry's HTTP status for ref's manifest.
func manifestStatus(t *testing.T, ref string) int {
	t.Helper()
	repoTag := strings.TrimPrefix(ref, registry+"/")
	repo, tag, _ := strings.Cut(repoTag, ":")
	req, err := http.NewRequest(http.MethodHead, "http://"+registry+"/v2/"+repo+"/manifests/"+tag, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// prune --k8s keeps the image a Job of the cluster names and deletes it
// from the registry once the Job is gone.
func TestPruneRegistry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "quick")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(repo, "client", "e2e", "testdata", "quick"))); err != nil {
		t.Fatal(err)
	}
	// Code of its own, so that its image is this test's alone.
	f := filepath.Join(dir, "vecadd.py")
	src, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, append(src, []byte("\n# "+t.Name()+" "+time.Now().String()+"\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	r := submit(t, 10*time.Minute, dir, "--cpu", "--keep", "--json")
	expect(t, r, 0)
	m := pushLine.FindStringSubmatch(r.Stderr)
	if m == nil {
		t.Fatalf("no push line:\n%s", r.Stderr)
	}
	ref, id := m[1], xruntest.JobID(t, r)
	if manifestStatus(t, ref) != http.StatusOK {
		t.Fatalf("%s is not in the registry after the submit", ref)
	}

	// The Job is still on the cluster: its image stays.
	dry := x.Run(t, time.Minute, "prune", "--k8s", "--older-than", "0", "--dry-run")
	expect(t, dry, 0, "named by Jobs of the cluster")
	if strings.Contains(dry.Stdout, ref) {
		t.Errorf("prune would remove the image of a Job on the cluster:\n%s", dry.Stdout)
	}
	young := x.Run(t, time.Minute, "prune", "--k8s", "--dry-run")
	expect(t, young, 0, "pushed in the last 1h0m0s")

	expect(t, x.Run(t, time.Minute, "rm", id), 0)
	p := x.Run(t, 2*time.Minute, "prune", "--k8s", "--older-than", "0")
	expect(t, p, 0)
	if !strings.Contains(p.Stdout, "removed "+ref) {
		t.Errorf("prune did not remove %s:\nstdout:\n%s\nstderr:\n%s", ref, p.Stdout, p.Stderr)
	}
	if s := manifestStatus(t, ref); s != http.StatusNotFound {
		t.Errorf("%s after prune: HTTP %d, want 404", ref, s)
	}
	// Nothing left to remove, and a registry is needed.
	again := x.Run(t, time.Minute, "prune", "--k8s", "--older-than", "0", "--dry-run", "--json")
	expect(t, again, 0)
	var rep struct {
		Where   string            `json:"where"`
		DryRun  bool              `json:"dry_run"`
		Removed []json.RawMessage `json:"removed"`
	}
	if err := json.Unmarshal([]byte(again.Stdout), &rep); err != nil || !rep.DryRun || rep.Where != registry || strings.Contains(again.Stdout, ref) {
		t.Errorf("second prune --json (%v):\n%s", err, again.Stdout)
	}
	expect(t, pruneWithoutRegistry(t), 3, "--registry")
}

// pruneWithoutRegistry runs prune --k8s with no registry given.
func pruneWithoutRegistry(t *testing.T) res {
	t.Helper()
	saved := registry
	registry = ""
	defer func() { registry = saved }()
	return x.Run(t, time.Minute, "prune", "--k8s")
}
