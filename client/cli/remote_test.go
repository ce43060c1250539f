package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/runner/contract"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/runner/result"
)

// TestConcurrentSubmitsShareNoGPU runs 20 attached `xrun submit --queue
// --gpus 1` at once, each its own App as separate processes would be, on
// one host with the test inventory of 4 GPUs: 20 jobs with distinct ids,
// none lost, no GPU on two running jobs, every reservation freed.
func TestConcurrentSubmitsShareNoGPU(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	f := ta.fake
	var overlaps []string
	f.Behave = func(s engine.ContainerSpec) enginetest.Run {
		// Start holds f.mu: the running set is a consistent snapshot.
		// The GPUs a container gets are its device request's; a standby
		// uses none until it runs its job (Ran).
		ids := func(s engine.ContainerSpec) []string {
			if s.GPUs == nil || len(s.GPUs.IDs) == 0 {
				return []string{""}
			}
			return s.GPUs.IDs
		}
		held := map[string]string{}
		for _, c := range f.Containers {
			if c.C.State == "running" && c.Ran && c.C.Labels[contract.LabelJob] != s.Labels[contract.LabelJob] {
				for _, g := range ids(c.Spec) {
					held[g] = c.C.Labels[contract.LabelJob]
				}
			}
		}
		for _, g := range ids(s) {
			if other, ok := held[g]; ok || g == "" {
				overlaps = append(overlaps, fmt.Sprintf("job %s started on GPU %q held by %s", s.Labels[contract.LabelJob], g, other))
			}
		}
		go func() {
			time.Sleep(20 * time.Millisecond)
			f.Exit(s.Name, 0)
		}()
		return enginetest.Run{Hang: true, Files: map[string]string{"results.json": resultsJSON(t, "my-kernel", result.StatusSucceeded)}}
	}
	env := map[string]string{gpus.FakeEnv: "4", "XDG_CACHE_HOME": t.TempDir()}
	const n = 20
	var wg sync.WaitGroup
	codes := make([]int, n)
	errs := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errb bytes.Buffer
			a := &App{
				Out: &out, Err: &errb,
				Getenv:    func(k string) string { return env[k] },
				Connect:   func(context.Context, connect.Selection) (engine.Engine, error) { return f, nil },
				RunnerFor: ta.RunnerFor,
				StoreRoot: ta.StoreRoot,
			}
			codes[i] = a.report(a.Command().RunContext(context.Background(), []string{"xrun", "submit", "--queue", "--gpus", "1", dir}))
			errs[i] = errb.String()
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Errorf("submit %d: exit %d: %s", i, c, errs[i])
		}
	}
	for _, o := range overlaps {
		t.Error(o)
	}
	st, err := ta.Store()
	if err != nil {
		t.Fatal(err)
	}
	list, err := st.List()
	if err != nil {
		t.Fatalf("job store unreadable: %v", err)
	}
	ids := map[string]bool{}
	for _, j := range list {
		ids[j.ID] = true
		if j.Status != result.StatusSucceeded || j.GPUs == "" {
			t.Errorf("job %s: status %s, GPUs %q", j.ID, j.Status, j.GPUs)
		}
	}
	if len(list) != n || len(ids) != n {
		t.Fatalf("%d records, %d distinct ids, want %d", len(list), len(ids), n)
	}
	if left, _ := f.List(context.Background(), map[string]string{gpus.LabelReservation: ""}, true); len(left) != 0 {
		t.Fatalf("%d GPU reservations left", len(left))
	}
}

// TestSubmitBusyGPUs: without --queue, a job whose GPUs are held fails
// with who holds them.
func TestSubmitBusyGPUs(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Hang: true} }
	ta.setenv(map[string]string{gpus.FakeEnv: "2", "XDG_CACHE_HOME": ta.StoreRoot})
	ta.Connect = func(context.Context, connect.Selection) (engine.Engine, error) {
		return ta.fake, nil
	}
	if code := ta.run(context.Background(), "submit", "-d", "--gpus", "all", dir); code != 0 {
		t.Fatalf("first submit: exit %d: %s", code, ta.err)
	}
	first := strings.TrimSpace(ta.out.String())
	code := ta.run(context.Background(), "submit", "-d", "--gpus", "1", dir)
	if code != ExitInfra || !strings.Contains(ta.err.String(), "cannot give this job 1 GPU now (0 free; held: GPU 0 by job "+first+", GPU 1 by job "+first+"): wait for them with --queue") {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
}

// TestSubmitGPUType: resources.gpu_type reaches the GPU assignment; a host
// without such a GPU is refused with what it has, before anything runs.
func TestSubmitGPUType(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	path := filepath.Join(dir, "xrun.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const typ = "  # gpu_type: H100"
	if !strings.Contains(string(b), typ) {
		t.Fatalf("the scaffold has no %q line:\n%s", typ, b)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), typ, "  gpu_type: H100  ", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ta.fake.Behave = succeed(t)
	ta.setenv(map[string]string{gpus.FakeEnv: "2", "XDG_CACHE_HOME": ta.StoreRoot})
	code := ta.run(context.Background(), "submit", dir)
	if code != ExitInfra || !strings.Contains(ta.err.String(), "has no H100 GPU (resources.gpu_type; it has 2x test GPU") {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	if len(ta.fake.Containers) != 0 {
		t.Errorf("%d containers made for a job that cannot run", len(ta.fake.Containers))
	}
}

// named is an engine reporting host as its address, as a named host does.
type named struct {
	engine.Engine
	host string
}

func (n named) Host() string { return n.host }

// TestSubmitFanOut: two hosts at once, one of them down; then both up,
// detached, and compare.
func TestSubmitFanOut(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	other := enginetest.New()
	ta.fake.Behave, other.Behave = succeed(t), succeed(t)
	ta.Connect = func(_ context.Context, sel connect.Selection) (engine.Engine, error) {
		switch sel.Host {
		case "lab":
			return named{ta.fake, "lab"}, nil
		case "cloud":
			return named{other, "cloud"}, nil
		}
		return nil, errors.New("cannot reach the Docker daemon at " + sel.Host + " (connection refused)")
	}
	code := ta.run(context.Background(), "submit", "--cpu", "--host", "lab", "--host", "down", dir)
	if code != ExitInfra {
		t.Fatalf("exit %d with a host down: %s", code, ta.err)
	}
	for _, want := range []string{"down | failed: cannot reach the Docker daemon at down (connection refused)", "lab  | job ", "xrun: 1 of 2 hosts failed (down)"} {
		if !strings.Contains(ta.err.String(), want) {
			t.Fatalf("stderr lacks %q:\n%s", want, ta.err)
		}
	}
	if !strings.Contains(ta.out.String(), "== lab ==") || strings.Contains(ta.out.String(), "== down ==") {
		t.Fatalf("stdout:\n%s", ta.out)
	}

	if code := ta.run(context.Background(), "submit", "-d", "--cpu", "--host", "lab", "--host", "cloud", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, ta.err)
	}
	lines := regexp.MustCompile(`(?m)^([0-9a-f]{12})\t(lab|cloud)$`).FindAllStringSubmatch(ta.out.String(), -1)
	if len(lines) != 2 || lines[0][2] != "lab" || lines[1][2] != "cloud" {
		t.Fatalf("detached fan-out printed:\n%s", ta.out)
	}
	st, _ := ta.Store()
	for _, l := range lines {
		j, err := st.Load(l[1])
		if err != nil || j.Status != store.StatusRunning && j.Status != result.StatusSucceeded {
			t.Fatalf("job %s: %+v %v", l[1], j, err)
		}
	}
	if code := ta.run(context.Background(), "compare", "--json", lines[0][1], lines[1][1]); code != 0 {
		t.Fatalf("compare: exit %d: %s", code, ta.err)
	}
	if !strings.Contains(ta.out.String(), `"job_id": "`+lines[1][1]+`"`) {
		t.Fatalf("compare --json:\n%s", ta.out)
	}
	if code := ta.run(context.Background(), "compare", lines[0][1]); code != ExitUsage {
		t.Fatalf("compare of one job: exit %d", code)
	}
}
