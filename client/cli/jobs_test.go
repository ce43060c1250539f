package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// The record, the store's results.json, wait and results agree on how a
// job ended, whoever stopped it.
func TestStatusAgreesWithResults(t *testing.T) {
	partial := func(t *testing.T, status string) string {
		r := result.Results{SchemaVersion: result.SchemaVersion, Experiment: "my-kernel", Status: status,
			CreatedAt: time.Unix(0, 0).UTC(), Criteria: []result.Criterion{{Name: "correct", Passed: true}}}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	tests := []struct {
		name string
		// results is what the runner wrote when it was stopped: cancelled
		// on SIGTERM, running when it was killed first.
		results string
		stop    func(ta *testApp, id string) int
		status  string
		code    int
		errHas  string
	}{
		{"timeout", result.StatusCancelled, func(ta *testApp, id string) int { return ta.run(context.Background(), "wait", id) },
			result.StatusTimeout, contract.ExitTimeout, "timed out after 200ms"},
		{"cancel", result.StatusRunning, func(ta *testApp, id string) int { return ta.run(context.Background(), "cancel", id) },
			result.StatusCancelled, contract.ExitCancelled, "was cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ta := newTestApp(t)
			dir := experiment(t, ta)
			res := partial(t, tt.results)
			ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run {
				return enginetest.Run{Hang: true, Files: map[string]string{"results.json": res}}
			}
			ctx := context.Background()
			if code := ta.run(ctx, "submit", "-d", "--cpu", "--timeout", "200ms", dir); code != 0 {
				t.Fatal(ta.err)
			}
			id := strings.TrimSpace(ta.out.String())
			if tt.name == "timeout" {
				time.Sleep(300 * time.Millisecond)
			}
			tt.stop(ta, id)
			if code := ta.run(ctx, "status", "--json", id); code != 0 {
				t.Fatal(ta.err)
			}
			var rec store.Job
			json.Unmarshal(ta.out.Bytes(), &rec)
			if rec.Status != tt.status {
				t.Errorf("record says %s, want %s", rec.Status, tt.status)
			}
			code := ta.run(ctx, "results", "--json", id)
			if code != tt.code || !strings.Contains(ta.err.String(), tt.errHas) {
				t.Errorf("results --json: exit %d, want %d; stderr %q lacks %q", code, tt.code, ta.err, tt.errHas)
			}
			r, err := result.Decode(ta.out.Bytes())
			if err != nil || r.Status != tt.status || r.Success {
				t.Errorf("results.json says %s (success %v), want %s: %v", r.Status, r.Success, tt.status, err)
			}
			code = ta.run(ctx, "results", id)
			if head, _, _ := strings.Cut(ta.out.String(), "\n"); code != tt.code || !strings.Contains(head, tt.status) {
				t.Errorf("results: exit %d, want %d:\n%s", code, tt.code, ta.out)
			}
			if code := ta.run(ctx, "wait", id); code != tt.code || strings.TrimSpace(ta.out.String()) != tt.status {
				t.Errorf("wait: exit %d, %q", code, ta.out)
			}
		})
	}
}

// Once an attached job's container is gone, logs reads the store: the
// runner's progress records as progress, and -t says it has no times to
// add. (The container's removal: client/job.)
func TestLogsAfterTheContainerWent(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = enginetest.Succeed("my-kernel")
	ctx := context.Background()
	if code := ta.run(ctx, "submit", "--cpu", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	st, _ := ta.Store()
	list, _ := st.List()
	if len(list) != 1 || len(ta.fake.Removed) != 1 {
		t.Fatalf("%d jobs, %d containers removed: want the job's container gone", len(list), len(ta.fake.Removed))
	}
	if code := ta.run(ctx, "logs", list[0].ID); code != 0 || !strings.Contains(ta.out.String(), "runner says hi") {
		t.Errorf("logs after the container went: exit %d, %q %s", code, ta.out, ta.err)
	}
	// The runner's progress records read as progress, not as records.
	if code := ta.run(ctx, "logs", list[0].ID); code != 0 || strings.Contains(ta.out.String(), "case=1/2") ||
		!strings.Contains(ta.out.String(), "10:00:01 progress: case 1/2") || strings.Count(ta.out.String(), "progress:") != 2 {
		t.Errorf("logs of progress records: exit %d\n%s", code, ta.out)
	}
	// The saved log has the runner's times alone: --timestamps says so.
	if code := ta.run(ctx, "logs", "-t", list[0].ID); code != 0 || !strings.Contains(ta.out.String(), "runner says hi") ||
		!strings.Contains(ta.err.String(), "is gone from its host") || !strings.Contains(ta.err.String(), "--timestamps adds none") {
		t.Errorf("logs -t after the container went: exit %d, %q %s", code, ta.out, ta.err)
	}
}

// submitRunning submits a detached CPU job that runs until it is stopped,
// logging three lines, and returns what submit printed: the job id.
func submitRunning(t *testing.T, ta *testApp) string {
	t.Helper()
	dir := experiment(t, ta)
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run {
		// A running runner's results.json says running until it ends.
		return enginetest.Run{Hang: true, Logs: "line1\nline2\nline3\n", Files: map[string]string{
			"results.json": enginetest.ResultsJSON("my-kernel", result.StatusRunning)}}
	}
	if code := ta.run(context.Background(), "submit", "-d", "--cpu", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	return strings.TrimSpace(ta.out.String())
}

func TestDetachedJobLifecycle(t *testing.T) {
	ta := newTestApp(t)
	ctx := context.Background()
	id := submitRunning(t, ta)
	if len(id) != 12 || strings.Contains(id, "\n") {
		t.Fatalf("detached stdout %q, want the job id alone", ta.out)
	}
	if code := ta.run(ctx, "ps", "--json"); code != 0 {
		t.Fatal(ta.err)
	}
	var ps []store.Job
	if err := json.Unmarshal(ta.out.Bytes(), &ps); err != nil || len(ps) != 1 || ps[0].ID != id || ps[0].Status != "running" {
		t.Errorf("ps = %s (%v)", ta.out, err)
	}
	if code := ta.run(ctx, "logs", "--tail", "2", id[:4]); code != 0 {
		t.Fatal(ta.err)
	}
	if !strings.Contains(ta.out.String(), "line1") { // the fake ignores --tail on a live container
		t.Errorf("logs: %q", ta.out)
	}
	if code := ta.run(ctx, "rm", id); code != contract.ExitUsage || !strings.Contains(ta.err.String(), "cancel it first (xrun cancel "+id+") or use --force") {
		t.Errorf("rm of a running job: exit %d, %s", code, ta.err)
	}
	if code := ta.run(ctx, "cancel", id); code != 0 {
		t.Fatalf("cancel: %s", ta.err)
	}
	if code := ta.run(ctx, "status", "--json", id); code != 0 {
		t.Fatal(ta.err)
	}
	var s struct {
		Status    string `json:"status"`
		Container *struct {
			State string `json:"state"`
		} `json:"container"`
	}
	json.Unmarshal(ta.out.Bytes(), &s)
	if s.Status != result.StatusCancelled {
		t.Errorf("status after cancel: %s", ta.out)
	}
	if code := ta.run(ctx, "wait", id); code != contract.ExitCancelled || strings.TrimSpace(ta.out.String()) != "cancelled" {
		t.Errorf("wait: exit %d, %q", code, ta.out)
	}
	if code := ta.run(ctx, "results", "--json", id); code != contract.ExitCancelled {
		t.Fatalf("results of a cancelled job: exit %d: %s", code, ta.err)
	}
	if _, err := result.Decode(ta.out.Bytes()); err != nil {
		t.Errorf("results --json: %v: %s", err, ta.out)
	}
	if code := ta.run(ctx, "rm", "--keep-record", id); code != 0 {
		t.Fatal(ta.err)
	}
	// The container is gone; the store still answers.
	if code := ta.run(ctx, "logs", "--tail", "1", id); code != 0 || ta.out.String() != "line3\n" {
		t.Errorf("logs from the store: exit %d, %q, %s", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "results", "--markdown", id); code != contract.ExitCancelled || ta.out.Len() == 0 {
		t.Errorf("results from the store: exit %d, %s", code, ta.err)
	}
	if code := ta.run(ctx, "rm", id); code != 0 {
		t.Fatal(ta.err)
	}
	if code := ta.run(ctx, "status", id); code != contract.ExitUsage || !strings.Contains(ta.err.String(), "the store holds no jobs") {
		t.Errorf("status after rm: exit %d, %s", code, ta.err)
	}
}

// A truncated record is listed by ps as unreadable, naming the file;
// other commands say so, and rm -f removes it and the job's container.
func TestTruncatedRecord(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Hang: true} }
	ctx := context.Background()
	if code := ta.run(ctx, "submit", "-d", "--cpu", dir); code != 0 {
		t.Fatal(ta.err)
	}
	id := strings.TrimSpace(ta.out.String())
	st, _ := ta.Store()
	path := filepath.Join(st.Dir(id), store.RecordFile)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)/2], 0o644)

	if code := ta.run(ctx, "ps"); code != 0 || !strings.Contains(ta.out.String(), id) || !strings.Contains(ta.out.String(), store.StatusUnreadable) || !strings.Contains(ta.err.String(), path) {
		t.Errorf("ps: exit %d\n%s%s", code, ta.out, ta.err)
	}
	if code := ta.run(ctx, "status", id); code != contract.ExitInfra || !strings.Contains(ta.err.String(), path) {
		t.Errorf("status: exit %d, %s", code, ta.err)
	}
	if code := ta.run(ctx, "rm", id); code == 0 || !strings.Contains(ta.err.String(), "xrun rm -f "+id) {
		t.Errorf("rm without -f: exit %d, %s", code, ta.err)
	}
	if cs, _ := ta.fake.List(ctx, map[string]string{contract.LabelJob: id}, true); len(cs) != 1 {
		t.Fatalf("the job has %d containers before rm -f", len(cs))
	}
	if code := ta.run(ctx, "rm", "-f", id); code != 0 || strings.TrimSpace(ta.out.String()) != id {
		t.Fatalf("rm -f: exit %d, %s", code, ta.err)
	}
	if _, err := os.Stat(st.Dir(id)); !os.IsNotExist(err) {
		t.Errorf("the job's directory is still there: %v", err)
	}
	if cs, _ := ta.fake.List(ctx, map[string]string{contract.LabelJob: id}, true); len(cs) != 0 {
		t.Errorf("rm -f left the job's container: %+v", cs)
	}
}

// ps with a host that cannot be reached fails with that sentence rather
// than listing nothing.
func TestPsUnreachableDaemon(t *testing.T) {
	for _, args := range [][]string{{"ps"}, {"ps", "--all", "--json"}, {"ps", "--host", "lab", "--host", "down"}} {
		ta := newTestApp(t)
		ta.Connect = func(_ context.Context, sel connect.Selection) (engine.Engine, error) {
			if sel.Host == "lab" {
				return ta.fake, nil
			}
			return nil, errors.New("cannot reach the Docker daemon at unix:///nowhere.sock: connection refused")
		}
		code := ta.run(context.Background(), args...)
		if code != contract.ExitInfra || ta.out.Len() != 0 || ta.err.String() != "xrun: cannot reach the Docker daemon at unix:///nowhere.sock: connection refused\n" {
			t.Errorf("xrun %v: exit %d, stdout %q, stderr %q", args, code, ta.out, ta.err)
		}
	}
}

// A job that ps lists from the host but another store submitted can be
// followed by id from this store: status, logs, cancel, wait and results
// find it on the host and record it here.
func TestJobOfAnotherStore(t *testing.T) {
	ta := newTestApp(t)
	ctx := context.Background()
	id := submitRunning(t, ta)

	other := newTestApp(t)
	other.Connect = ta.Connect // the same host, another store
	if code := other.run(ctx, "status", "--json", id[:6]); code != 0 {
		t.Fatalf("status from another store: exit %d, %s", code, other.err)
	}
	var s job.Status
	if err := json.Unmarshal(other.out.Bytes(), &s); err != nil || s.ID != id || s.Status != store.StatusRunning || s.Container == nil {
		t.Errorf("status = %s (%v)", other.out, err)
	}
	if st, _ := other.Store(); !st.Has(id, store.RecordFile) {
		t.Errorf("the job found on the host has no record in this store")
	}
	if !strings.Contains(other.err.String(), "is not in this job store: found on unix:///fake.sock, recorded here") {
		t.Errorf("adopting a job says nothing: %s", other.err)
	}
	if code := other.run(ctx, "logs", id); code != 0 || !strings.Contains(other.out.String(), "line2") {
		t.Errorf("logs: exit %d, %q, %s", code, other.out, other.err)
	}
	if code := other.run(ctx, "cancel", id); code != 0 {
		t.Fatalf("cancel: exit %d, %s", code, other.err)
	}
	if code := other.run(ctx, "wait", id); code != contract.ExitCancelled || strings.TrimSpace(other.out.String()) != "cancelled" {
		t.Errorf("wait: exit %d, %q, %s", code, other.out, other.err)
	}
	if code := other.run(ctx, "results", "--json", id); code != contract.ExitCancelled {
		t.Errorf("results: exit %d, %s", code, other.err)
	}
	if _, err := result.Decode(other.out.Bytes()); err != nil {
		t.Errorf("results --json: %v: %s", err, other.out)
	}
	// Neither here nor on the host: the store's sentence, and where else it looked.
	if code := other.run(ctx, "status", "0000deadbeef"); code != contract.ExitUsage || !strings.Contains(other.err.String(), `no job "0000deadbeef"`) ||
		!strings.Contains(other.err.String(), "; not on ") || !strings.Contains(other.err.String(), " either") ||
		!strings.Contains(other.err.String(), "a job on a Kubernetes cluster: add --k8s") {
		t.Errorf("status of an unknown job: exit %d, %s", code, other.err)
	}
	// A host that cannot be asked: the named one is an error of its own,
	// the default one leaves the store's answer.
	down := newTestApp(t)
	down.Connect = func(context.Context, connect.Selection) (engine.Engine, error) {
		return nil, errors.New("cannot reach the Docker daemon at ssh://lab: connection refused")
	}
	if code := down.run(ctx, "logs", "--host", "ssh://lab", "0000deadbeef"); code != contract.ExitInfra || !strings.Contains(down.err.String(), "cannot reach") {
		t.Errorf("logs --host down: exit %d, %s", code, down.err)
	}
	if code := down.run(ctx, "logs", "0000deadbeef"); code != contract.ExitUsage || !strings.Contains(down.err.String(), "the default host could not be asked") {
		t.Errorf("logs, default host down: exit %d, %s", code, down.err)
	}
}

// Ctrl-C stops following a job's log, not the job: xrun says so and exits
// as an interrupted xrun does.
func TestLogsFollowInterrupted(t *testing.T) {
	ta := newTestApp(t)
	id := submitRunning(t, ta)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	code := ta.run(ctx, "logs", "-f", id)
	if code != contract.ExitCancelled || !strings.Contains(ta.err.String(), "stopped following; job "+id+" goes on") {
		t.Errorf("interrupted logs -f: exit %d, %s", code, ta.err)
	}
}

// wait says what it waits for and shows the job's progress on stderr, not
// its log; stdout keeps the job's status alone.
func TestWaitShowsProgress(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = enginetest.Succeed("my-kernel")
	ctx := context.Background()
	if code := ta.run(ctx, "submit", "--cpu", "-d", dir); code != 0 {
		t.Fatalf("submit -d: exit %d: %s", code, ta.err)
	}
	id := strings.TrimSpace(ta.out.String())
	if code := ta.run(ctx, "wait", id); code != 0 || strings.TrimSpace(ta.out.String()) != "succeeded" {
		t.Fatalf("wait: exit %d, %q %s", code, ta.out, ta.err)
	}
	e := ta.err.String()
	if !strings.Contains(e, "waiting for job "+id) || !strings.Contains(e, "progress: case 1/2") || strings.Contains(e, "runner says hi") {
		t.Errorf("wait's stderr:\n%s", e)
	}
}

// ps --filter keeps the jobs every KEY=VALUE holds for, --format prints
// each through a template, and the table has each job's DURATION.
func TestPsFilterFormatDuration(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ctx := context.Background()
	ta.fake.Behave = enginetest.Succeed("my-kernel")
	if code := ta.run(ctx, "submit", "--cpu", "--no-standby", dir); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, ta.err)
	}
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Exit: 2} }
	if code := ta.run(ctx, "submit", "--cpu", "--no-standby", dir); code != contract.ExitFailed {
		t.Fatalf("failing submit: exit %d: %s", code, ta.err)
	}
	st, _ := ta.Store()
	list, _ := st.List()
	var failed string
	for _, j := range list {
		if j.Status == result.StatusFailed {
			failed = j.ID
		}
	}
	if code := ta.run(ctx, "ps", "-a", "-q", "--filter", "status=failed", "--filter", "experiment=my-kernel"); code != 0 || strings.TrimSpace(ta.out.String()) != failed {
		t.Errorf("--filter status=failed: exit %d, %q (want %s)", code, ta.out, failed)
	}
	if code := ta.run(ctx, "ps", "-a", "--format", "{{.ID}}:{{.Status}}", "--filter", "status=failed"); code != 0 || strings.TrimSpace(ta.out.String()) != failed+":failed" {
		t.Errorf("--format: exit %d, %q", code, ta.out)
	}
	if code := ta.run(ctx, "ps", "-a"); code != 0 || !strings.Contains(ta.out.String(), "DURATION") || strings.Count(ta.out.String(), "\n") != 3 {
		t.Errorf("ps -a: exit %d\n%s", code, ta.out)
	}
	for _, bad := range [][]string{{"--filter", "colour=red"}, {"--format", "{{.Nope"}} {
		if code := ta.run(ctx, append([]string{"ps", "-a"}, bad...)...); code != contract.ExitUsage {
			t.Errorf("ps %v: exit %d, want %d: %s", bad, code, contract.ExitUsage, ta.err)
		}
	}
}
