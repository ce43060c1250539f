//go:build integration

package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/internal/testenv"
)

// TestServerComposeOnPostgreSQL brings up images/server/compose.yaml as a
// user would: the server's image (scripts/server-image.sh, from the
// binary under test) beside PostgreSQL, the password in a secret file.
// A post lands, survives a restart of the server, and xrun history
// --server prints what the local history prints of the same file. The
// postgres image cannot be pulled here: the stand-in is Debian's
// PostgreSQL 15 with the postgres image's variables (testdata/postgres).
func TestServerComposeOnPostgreSQL(t *testing.T) {
	compose, err := exec.LookPath("docker-compose")
	if err != nil {
		testenv.Missing(t, "docker-compose is not installed (apt-get install docker-compose; scripts/setup.sh installs it)")
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	id := hex.EncodeToString(suffix)
	pgImage, serverImage := "xrun-e2e/postgres:15", "xrun-e2e/server:"+id
	run := func(limit time.Duration, env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(limit, func() { cmd.Process.Kill() })
		defer timer.Stop()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	// Kept between runs: its layers are the slow part (Debian's packages).
	run(15*time.Minute, nil, "docker", "build", "-q", "-t", pgImage, filepath.Join(repo, "client", "e2e", "testdata", "postgres"))
	run(5*time.Minute, []string{"XRUN_BIN=" + xrunBin}, filepath.Join(repo, "scripts", "server-image.sh"), serverImage)
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", serverImage).Run() })

	// The compose file as a user deploys it: copied to a directory of its
	// own (0700), with the password beside it, readable by the
	// containers' users.
	dir := filepath.Join(t.TempDir(), "xrun-server")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	yaml, err := os.ReadFile(filepath.Join(repo, "images", "server", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), yaml, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "db_password"), []byte("pw-"+id+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	project := "xrun-e2e-" + id
	env := []string{"XRUN_POSTGRES_IMAGE=" + pgImage, "XRUN_SERVER_IMAGE=" + serverImage, "XRUN_SERVER_PORT=0"}
	dc := func(args ...string) string {
		t.Helper()
		return run(5*time.Minute, env, compose, append([]string{"--project-directory", dir, "-f", filepath.Join(dir, "compose.yaml"), "-p", project}, args...)...)
	}
	t.Cleanup(func() {
		cmd := exec.Command(compose, "--project-directory", dir, "-f", filepath.Join(dir, "compose.yaml"), "-p", project, "down", "-v")
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("docker-compose down: %v\n%s", err, out)
		}
	})
	dc("up", "-d")
	port := strings.TrimSpace(dc("port", "server", "8420"))
	if _, p, ok := strings.Cut(port, ":"); !ok || p == "0" {
		t.Fatalf("docker-compose port server 8420 = %q", port)
	}
	base := "http://" + port
	waitHealthy := func() {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			resp, err := http.Get(base + "/healthz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the server at %s did not answer /healthz within 2 minutes: %v\n%s", base, err, dc("logs", "--tail", "40"))
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	waitHealthy()
	token := func(scope, name string) string {
		t.Helper()
		out := run(time.Minute, env, compose, "--project-directory", dir, "-f", filepath.Join(dir, "compose.yaml"), "-p", project,
			"exec", "-T", "server", "xrun", "serve", "token", "add", "--scope", scope, name)
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "xrun_") {
				return strings.TrimSpace(line)
			}
		}
		t.Fatalf("no token in the answer of xrun serve token add: %s", out)
		return ""
	}
	postToken, readToken := token("post", "runners"), token("read", "ci")

	file := filepath.Join(repo, "experiments", "dual-gemm-small-m", "results", "2026-11-24-h100-xrun-submit", "results.json")
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/results", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+postToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("post: %s, want 201 Created", resp.Status)
	}

	// The history is PostgreSQL's, not the container's: a new server
	// container finds it.
	dc("up", "-d", "--force-recreate", "--no-deps", "server")
	port = strings.TrimSpace(dc("port", "server", "8420"))
	base = "http://" + port
	waitHealthy()
	got := x.RunEnv(t, time.Minute, []string{"XRUN_SERVER_TOKEN=" + readToken}, "history", "--server", base)
	expect(t, got, 0)

	// The local side reads an empty job store of its own: the suite's
	// finished jobs would join the history it reads.
	own := []string{"XDG_DATA_HOME=" + t.TempDir()}
	local := filepath.Join(t.TempDir(), "history.db")
	expect(t, x.RunEnv(t, time.Minute, own, "history", "import", "--history", local, file), 0)
	want := x.RunEnv(t, time.Minute, own, "history", "--history", local)
	expect(t, want, 0)
	if got.Stdout != want.Stdout {
		t.Errorf("history --server on the compose deployment printed\n%s\nthe local history of the same file\n%s", got.Stdout, want.Stdout)
	}
}
