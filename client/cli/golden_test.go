package cli

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden from this build's output")

// TestGoldenOutputs runs the readers on the results committed with the
// experiments (experiments/*/results) and compares what they print, byte
// for byte, with testdata/golden: every format of results, compare,
// history and regress, and a digest of every file of report --html. A
// change to how a number, a table or a page comes out shows here as a
// diff of the golden files; rewrite them with
//
//	go test ./client/cli -run TestGoldenOutputs -update
//
// and say in the commit why the output changed.
func TestGoldenOutputs(t *testing.T) {
	golden, err := filepath.Abs(filepath.Join("testdata", "golden"))
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// Paths in the output read as a user at the repository's root types them.
	t.Chdir(root)
	byExperiment := committedResults(t)
	if len(byExperiment) == 0 {
		t.Fatal("no results.json under experiments/*/results: the golden outputs have nothing to read")
	}

	ta := newTestApp(t)
	defer func() { ta.Close() }()
	data := t.TempDir()
	ta.setenv(map[string]string{"XRUN_HISTORY": filepath.Join(data, "history.db"), "XDG_DATA_HOME": data,
		"XDG_CONFIG_HOME": data, "XRUN_SERVER": "", "XRUN_SERVER_TOKEN": "", "NO_COLOR": "1"})
	ctx := context.Background()
	got := map[string]*strings.Builder{}
	record := func(file string, args ...string) {
		b := got[file]
		if b == nil {
			b = &strings.Builder{}
			got[file] = b
		}
		code := ta.run(ctx, args...)
		fmt.Fprintf(b, "== xrun %s (exit %d) ==\n%s", strings.Join(args, " "), code, ta.out.String())
		if e := ta.err.String(); e != "" {
			fmt.Fprintf(b, "-- stderr --\n%s", e)
		}
	}

	dirs := make([]string, 0, len(byExperiment))
	for d := range byExperiment {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		files := byExperiment[d]
		for _, f := range files {
			for _, format := range [][]string{nil, {"--markdown"}, {"--csv"}} {
				record("results-"+d+".txt", append(append([]string{"results"}, format...), f)...)
			}
		}
		// Each run beside the one before it: every pair the experiment's
		// own history would line up.
		for i := 1; i < len(files); i++ {
			for _, format := range [][]string{nil, {"--markdown"}, {"--json"}} {
				record("compare-"+d+".txt", append(append([]string{"compare"}, format...), files[i-1], files[i])...)
			}
		}
	}

	record("history.txt", "history", "import", "experiments")
	for _, args := range [][]string{
		{"history", "--last", "0"}, {"history", "--json"}, {"history", "--csv"},
		{"regress"}, {"regress", "--all"}, {"regress", "--markdown"}, {"regress", "--json"},
	} {
		record("history.txt", args...)
	}

	// The site of three small experiments: every kind of page, without
	// drawing the hundreds of figures of the whole history.
	ta.Close()
	ta = newTestApp(t)
	ta.setenv(map[string]string{"XRUN_HISTORY": filepath.Join(data, "site.db"), "XDG_DATA_HOME": data,
		"XDG_CONFIG_HOME": data, "XRUN_SERVER": "", "XRUN_SERVER_TOKEN": "", "NO_COLOR": "1"})
	record("site.txt", "history", "import", "experiments/039-gla-pingpong", "experiments/dual-gemm-small-m", "experiments/058-projection-chain-forward")
	site := filepath.Join(t.TempDir(), "site")
	record("site.txt", "report", "--html", site, "--json")
	text := strings.ReplaceAll(got["site.txt"].String(), site, "SITE")
	got["site.txt"].Reset()
	got["site.txt"].WriteString(text)
	got["site.sha256"] = &strings.Builder{}
	if err := filepath.WalkDir(site, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(site, p)
		fmt.Fprintf(got["site.sha256"], "%x  %s\n", sha256.Sum256(b), filepath.ToSlash(rel))
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	if *updateGolden {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(golden, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range got {
			if err := os.WriteFile(filepath.Join(golden, name), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for name, b := range got {
		want, err := os.ReadFile(filepath.Join(golden, name))
		if err != nil {
			t.Errorf("%s: %v (a new output: rewrite the golden files with -update)", name, err)
			continue
		}
		if string(want) != b.String() {
			t.Errorf("%s differs from its golden file at line %d:\n%s", name, firstDiffLine(string(want), b.String()), diffContext(string(want), b.String()))
		}
	}
	entries, _ := os.ReadDir(golden)
	for _, e := range entries {
		if got[e.Name()] == nil {
			t.Errorf("testdata/golden/%s is no longer written: remove it with -update", e.Name())
		}
	}
	if t.Failed() && os.Getenv("XRUN_KEEP_GOLDEN") != "" {
		// The outputs of this build, to diff against the golden files.
		dst := os.Getenv("XRUN_KEEP_GOLDEN")
		os.MkdirAll(dst, 0o755)
		for name, b := range got {
			os.WriteFile(filepath.Join(dst, name), []byte(b.String()), 0o644)
		}
		t.Logf("this build's outputs are in %s", dst)
	} else if t.Failed() {
		t.Logf("set XRUN_KEEP_GOLDEN=DIR to keep this build's outputs for a diff")
	}
}

// committedResults returns the results.json files under experiments/*/results,
// sorted, by experiment directory.
func committedResults(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	matches, err := filepath.Glob(filepath.Join("experiments", "*", "results"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range matches {
		exp := filepath.Base(filepath.Dir(dir))
		if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == "results.json" {
				out[exp] = append(out[exp], filepath.ToSlash(p))
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		sort.Strings(out[exp])
	}
	return out
}

// firstDiffLine is the 1-based line where a and b first differ.
func firstDiffLine(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

// diffContext shows the first differing line of want and got with the
// lines around it.
func diffContext(want, got string) string {
	n := firstDiffLine(want, got) - 1
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := max(0, n-3); i < n+3; i++ {
		if i < len(wl) {
			fmt.Fprintf(&b, "  want %5d: %s\n", i+1, wl[i])
		}
		if i < len(gl) {
			fmt.Fprintf(&b, "  got  %5d: %s\n", i+1, gl[i])
		}
	}
	return b.String()
}
