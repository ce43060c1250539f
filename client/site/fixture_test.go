package site

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/result"
)

// Names of the experiment's own, which the experiment's code makes up:
// the site must show them as text.
const (
	evilExperiment = "<script>alert(1)</script>"
	evilImpl       = `<img src=x onerror="alert(2)">`
	evilError      = `</pre><script>alert(3)</script>`
)

// nightResults is one night of an experiment: the baseline "blocked" and
// the candidate impl at two sizes, the candidate's median times slow.
func nightResults(exp, id, impl string, at time.Time, slow float64, errText string) *result.Results {
	r := &result.Results{SchemaVersion: result.SchemaVersion, JobID: id, Experiment: exp, CreatedAt: at,
		Status: result.StatusSucceeded, Mode: "gpu", Implementations: []string{"blocked", impl}, Baseline: "blocked",
		SpecHash: "sha256:5pec", RunnerVersion: "0.9.0", ClientVersion: "0.9.0", SweepKeys: []string{"N"},
		Image: result.Image{Ref: "xrun/job:abc", CodeHash: "sha256:c0de"},
		Env: result.Env{Host: "gpu-box", OS: "linux", Arch: "amd64", Driver: "580.159.04", CUDARuntime: "13.0", Torch: "2.11.0",
			Python: "3.12.3", GitCommit: "4e11f86c0ffee", GPUs: []result.GPU{{Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-52449011",
				Before: &result.GPUState{MaxSMClockMHz: 1980, PowerLimitW: 700}}}},
		Criteria: []result.Criterion{{Name: impl + " 1.2x faster than blocked", Kind: "speedup", Value: 1.1, Threshold: 1.2,
			Expect: result.ExpectFail}}}
	// A little night-to-night noise, the same every time the test runs.
	noise := 1 + 0.004*math.Sin(float64(at.Unix()/3600))
	for _, n := range []int{1024, 4096} {
		base := float64(n) / 1024 * noise
		c := result.Case{Params: map[string]any{"N": n}, Label: fmt.Sprintf("N=%d", n), Results: map[string]*result.ImplResult{}}
		timing := func(ms float64) *result.Timing {
			return &result.Timing{MedianMS: ms, Q1MS: ms * 0.99, Q3MS: ms * 1.01, Samples: 50, Converged: true,
				Clock: result.ClockEvents, KeptSamplesMS: []float64{ms * 0.99, ms, ms * 1.01, ms}}
		}
		c.Results["blocked"] = &result.ImplResult{Status: result.ImplOK, Timing: timing(base)}
		if errText != "" && n == 4096 {
			c.Results[impl] = &result.ImplResult{Status: result.ImplError, Error: errText}
		} else {
			own := 1 + 0.006*math.Cos(float64(at.Unix()/3600)*0.7)
			c.Results[impl] = &result.ImplResult{Status: result.ImplOK, Timing: timing(base * 0.8 * slow * own)}
		}
		r.Cases = append(r.Cases, c)
	}
	return r
}

// fixture writes fourteen nights of "gemm" (night 11 a spike of the
// candidate, nights 13 and 14 a 20 % slowdown of it: suspect, then
// regressed) and twelve of an experiment whose names are markup, as
// results.json files, imports them into a new history, and returns it.
func fixture(t testing.TB) (*history.Store, string) {
	t.Helper()
	dir := t.TempDir()
	h, err := makeFixture(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, dir
}

func makeFixture(dir string) (*history.Store, error) {
	h, err := history.Open(filepath.Join(dir, "history.db"))
	if err != nil {
		return nil, err
	}
	start := time.Date(2026, 11, 1, 2, 17, 0, 0, time.UTC)
	write := func(r *result.Results) error {
		p := filepath.Join(dir, "runs", r.JobID, "results.json")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := result.WriteFile(p, r); err != nil {
			return err
		}
		_, err := h.Import(r, history.Source{Origin: p})
		return err
	}
	for i := 0; i < 14; i++ {
		slow := 1.0
		switch i {
		case 10:
			slow = 1.25
		case 12, 13:
			slow = 1.2
		}
		if err := write(nightResults("gemm", fmt.Sprintf("a%03d", i), "tiled", start.Add(time.Duration(i)*24*time.Hour), slow, "")); err != nil {
			return nil, err
		}
	}
	for i := 0; i < 12; i++ {
		errText := ""
		if i == 11 {
			errText = evilError
		}
		r := nightResults(evilExperiment, fmt.Sprintf("e/%03d", i), evilImpl, start.Add(time.Duration(i)*24*time.Hour+time.Hour), 1, errText)
		r.Env.Host = "<i>host</i>"
		if err := write(r); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// shared is the fixture's history and its site, built once for the tests
// that only read them (TestMain removes them).
var shared struct {
	once  sync.Once
	tmp   string
	h     *history.Store
	site  string
	pages []Page
	err   error
}

func sharedSite(t *testing.T) (*history.Store, string, []Page) {
	t.Helper()
	shared.once.Do(func() {
		if shared.tmp, shared.err = os.MkdirTemp("", "xrun-site-test-"); shared.err != nil {
			return
		}
		if shared.h, shared.err = makeFixture(shared.tmp); shared.err != nil {
			return
		}
		shared.site = filepath.Join(shared.tmp, "site")
		shared.pages, shared.err = Build(shared.h, testOptions(shared.site))
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.h, shared.site, shared.pages
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.h != nil {
		shared.h.Close()
	}
	if shared.tmp != "" {
		os.RemoveAll(shared.tmp)
	}
	os.Exit(code)
}

// readResults is Options.Results for the fixture: the file each run was
// imported from, its head alone where the site asks no cases.
func readResults(r history.Run, cases bool) *result.Results {
	read := result.ReadFile
	if !cases {
		read = result.ReadHeadFile
	}
	res, err := read(r.Source)
	if err != nil {
		return nil
	}
	return res
}

func testOptions(dir string) Options {
	return Options{Dir: dir, Rule: regress.Default(), Results: readResults}
}
