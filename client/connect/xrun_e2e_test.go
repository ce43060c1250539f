//go:build integration

package connect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/internal/testenv"
	"github.com/xrun-dev/xrun/result"
)

// base is the CPU base the e2e suites build on (images/make-cpu-base.sh).
const base = "xrun/cpu-base:bookworm"

// remoteLabel marks what these tests leave on the local daemon, for cleanup.
const remoteLabel = "dev.xrun.test=remote"

// xrunEnv is the xrun binary under test in its environment.
type xrunEnv struct {
	xruntest.Xrun
	repo string
}

type run = xruntest.Result

// experiment is the directory of the experiment the tests submit.
func (x *xrunEnv) experiment() string {
	return filepath.Join(x.repo, "client", "connect", "testdata", "remote-quick")
}

func (x *xrunEnv) submit(t *testing.T, flags ...string) run {
	t.Helper()
	args := append([]string{"submit", "--cpu", "--base", base, "--label", remoteLabel}, flags...)
	return x.Run(t, 4*time.Minute, append(args, x.experiment())...)
}

var expectCode = xruntest.Expect

// jobIDs maps the host of each job in js to its id.
func jobIDs(js []xruntest.Job) map[string]string {
	ids := map[string]string{}
	for _, j := range js {
		ids[j.Host] = j.ID
	}
	return ids
}

// ensureBase makes the CPU base when it is missing, as the e2e suite does.
func ensureBase(t *testing.T, repo string) {
	t.Helper()
	cli, err := client.New(client.WithHost(testenv.LocalHost))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(context.Background(), base); err == nil {
		return
	}
	if os.Geteuid() != 0 {
		testenv.Missing(t, "%s is missing and making it needs root: run `sudo images/make-cpu-base.sh`", base)
	}
	var out bytes.Buffer
	if err := xruntest.MakeBase(repo, &out); err != nil {
		t.Fatalf("make %s: %v\n%s", base, err, out.String())
	}
}

// TestXrunOnRemoteHosts drives the real xrun binary: the same experiment
// over a unix socket, tcp with TLS and ssh; a wrong CA refused; fan-out
// over two daemons and compare; ps across hosts; and fan-out with one
// daemon stopped.
func TestXrunOnRemoteHosts(t *testing.T) {
	testenv.RequireDocker(t)
	repo := xruntest.Repo()
	ensureBase(t, repo)
	d := testenv.StartDaemon(t)
	s := testenv.StartSSHD(t)
	testenv.CopyImage(t, base, testenv.LocalHost, d.Socket)

	tmp := t.TempDir()
	x := &xrunEnv{Xrun: xruntest.Xrun{Bin: filepath.Join(tmp, "xrun")}, repo: repo}
	if err := xruntest.Build(repo, x.Bin); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`hosts:
  second-tls:
    host: %s
    cert_path: %s
  wrong-ca:
    host: %s
    cert_path: %s
  lab:
    host: %s
    ssh_options: %s
`, d.TCP, d.CertDir, d.TCP, d.WrongCADir, s.Host, flowList(s.Options))
	if err := os.MkdirAll(filepath.Join(tmp, "config", "xrun"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "config", "xrun", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"XDG_DATA_HOME="+filepath.Join(tmp, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(tmp, "config"),
		"XDG_CACHE_HOME="+filepath.Join(tmp, "cache"),
		"DOCKER_CONFIG="+filepath.Join(tmp, "docker"),
		"XRUN_HOST=", "XRUN_CONTEXT=", "DOCKER_HOST=", "DOCKER_CONTEXT=", "DOCKER_TLS_VERIFY=", "DOCKER_CERT_PATH=")
	x.Env = func() []string { return env }
	t.Cleanup(func() { cleanupLocal(t) })

	// The same experiment over the three transports.
	for _, tc := range []struct{ name, host string }{
		{"unix socket", d.Socket},
		{"tcp with TLS", "second-tls"},
		{"ssh", "lab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := x.submit(t, "--json", "--host", tc.host)
			expectCode(t, r, 0, "on "+tc.host)
			j, _ := xruntest.DecodeJob(t, r)
			if j.Host != tc.host {
				t.Fatalf("submit --json printed job %q on %q, want one on %s:\n%s", j.ID, j.Host, tc.host, r.Stdout)
			}
			id := j.ID
			res := x.Run(t, time.Minute, "results", "--json", id)
			expectCode(t, res, 0)
			doc, err := result.Decode([]byte(res.Stdout))
			if err != nil || !doc.Success || doc.JobID != id {
				t.Fatalf("results of %s: %v\n%s", id, err, res.Stdout)
			}
			// A later command reaches the job's host from its record.
			expectCode(t, x.Run(t, time.Minute, "status", id), 0)
		})
	}

	t.Run("wrong CA", func(t *testing.T) {
		r := x.submit(t, "--host", "wrong-ca")
		if r.Code == 0 || !strings.Contains(r.Stderr, "TLS verification of Docker host wrong-ca") {
			t.Fatalf("exit %d\nstderr:\n%s", r.Code, r.Stderr)
		}
	})

	var ids map[string]string
	t.Run("fan-out and compare", func(t *testing.T) {
		// Without --json, as a person sees it: the ids come from ps --json.
		r, made := x.SubmittedJobs(t, x.experiment(), func() run { return x.submit(t, "--host", testenv.LocalHost, "--host", "second-tls") })
		expectCode(t, r, 0, fmt.Sprintf("%-*s | ", len(testenv.LocalHost), "second-tls"), testenv.LocalHost+" | ")
		t.Logf("xrun submit --host %s --host second-tls:\nstderr:\n%s\nstdout:\n%s", testenv.LocalHost, r.Stderr, r.Stdout)
		ids = jobIDs(made)
		if len(made) != 2 || ids[testenv.LocalHost] == "" || ids["second-tls"] == "" {
			t.Fatalf("new jobs %+v\n%s", made, r.Stderr)
		}
		c := x.Run(t, time.Minute, "compare", ids[testenv.LocalHost], ids["second-tls"])
		expectCode(t, c, 0)
		// The host column names the daemon's machine, with the alias the
		// job was submitted to: "NAME (second-tls)".
		for _, want := range []string{"comparing remote-quick", "second-tls", "N=1024", "N=4096", "loop"} {
			if !strings.Contains(c.Stdout, want) {
				t.Fatalf("compare lacks %q:\n%s", want, c.Stdout)
			}
		}
		cj := x.Run(t, time.Minute, "compare", "--json", ids[testenv.LocalHost], ids["second-tls"])
		expectCode(t, cj, 0)
		var rep struct {
			Jobs []struct{ Host string } `json:"jobs"`
		}
		if err := json.Unmarshal([]byte(cj.Stdout), &rep); err != nil || len(rep.Jobs) != 2 || !strings.Contains(rep.Jobs[1].Host, "second-tls") {
			t.Fatalf("compare --json: %v\n%s", err, cj.Stdout)
		}
	})

	t.Run("ps across hosts", func(t *testing.T) {
		r := x.Run(t, time.Minute, "ps", "--all", "--json", "--host", testenv.LocalHost, "--host", "second-tls")
		expectCode(t, r, 0)
		for _, id := range ids {
			if !strings.Contains(r.Stdout, id) {
				t.Fatalf("ps lacks job %s:\n%s", id, r.Stdout)
			}
		}
	})

	t.Run("fan-out with one host stopped", func(t *testing.T) {
		d.Stop(t)
		r := x.submit(t, "--json", "--host", testenv.LocalHost, "--host", "second-tls")
		if r.Code == 0 {
			t.Fatalf("exit 0 with a host down\nstderr:\n%s", r.Stderr)
		}
		if !strings.Contains(r.Stderr, fmt.Sprintf("%-*s | failed: cannot reach the Docker daemon at second-tls", len(testenv.LocalHost), "second-tls")) {
			t.Fatalf("the failure is not reported for its host:\n%s", r.Stderr)
		}
		t.Logf("with second-tls stopped (exit %d):\n%s", r.Code, r.Stderr)
		started := xruntest.DecodeJobs(t, r)
		id := jobIDs(started)[testenv.LocalHost]
		if id == "" || len(started) != 1 {
			t.Fatalf("submit --json printed %+v, want the local job alone:\n%s", started, r.Stderr)
		}
		st := x.Run(t, time.Minute, "status", "--json", id)
		expectCode(t, st, 0)
		if !strings.Contains(st.Stdout, `"succeeded"`) {
			t.Fatalf("the local job did not complete:\n%s", st.Stdout)
		}
	})
}

// flowList renders strings as a YAML flow sequence.
func flowList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		b, _ := json.Marshal(s)
		quoted[i] = string(b)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// cleanupLocal removes what the tests left on the local daemon (the ssh
// transport reaches it too).
func cleanupLocal(t *testing.T) {
	cli, err := client.New(client.WithHost(testenv.LocalHost))
	if err != nil {
		return
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := client.Filters{}.Add("label", remoteLabel)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err == nil {
		for _, c := range cs.Items {
			cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
		}
	}
	ims, err := cli.ImageList(ctx, client.ImageListOptions{Filters: f})
	if err == nil {
		for _, im := range ims.Items {
			cli.ImageRemove(ctx, im.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true})
		}
	}
}
