package cli

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

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
	ta.fake.Behave, other.Behave = enginetest.Succeed("my-kernel"), enginetest.Succeed("my-kernel")
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
	if code != contract.ExitInfra {
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
	if code := ta.run(context.Background(), "compare", lines[0][1]); code != contract.ExitUsage {
		t.Fatalf("compare of one job: exit %d", code)
	}
}
