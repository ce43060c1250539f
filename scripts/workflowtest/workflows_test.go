// Package workflowtest runs the GitHub workflows' steps that talk to
// GitHub as a runner would (the step's run: line with bash -e, the scripts
// with the modes git records, the step's environment), against a fake of
// the GitHub REST API: the nightly opens an issue for a confirmed
// regression and comments on it the next night, and the pull-request
// workflow keeps one comment per pull request.
package workflowtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/internal/testenv"
)

const (
	repoName = "lab/kernels"
	token    = "ghs_test_token"
)

// repo is the repository's root.
var repo = func() string {
	d, _ := filepath.Abs(filepath.Join("..", ".."))
	return d
}()

// fakeGitHub is the part of the REST API the scripts use: issues, their
// comments, and a pull request's comments (an issue's, as GitHub has them).
type fakeGitHub struct {
	mu       sync.Mutex
	issues   []issue
	comments map[int][]comment
	labels   map[int][]string
	nextID   int
	requests []string
}

type issue struct {
	Number int      `json:"number"`
	Title  string   `json:"title"`
	Body   string   `json:"body"`
	Labels []string `json:"-"`
	State  string   `json:"state"`
}

type comment struct {
	ID   int    `json:"id"`
	Body string `json:"body"`
	User user   `json:"user"`
}

type user struct {
	Login string `json:"login"`
}

// bot is the workflow token's user: the author of what the scripts post.
var bot = user{Login: "github-actions[bot]"}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	if r.Header.Get("Authorization") != "Bearer "+token {
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		return
	}
	prefix := "/repos/" + repoName
	path, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	var in struct {
		Title  string   `json:"title"`
		Body   string   `json:"body"`
		Labels []string `json:"labels"`
	}
	if r.Method == http.MethodPost || r.Method == http.MethodPatch {
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, `{"message":"Problems parsing JSON"}`, http.StatusBadRequest)
			return
		}
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	switch {
	case r.Method == http.MethodGet && path == "/issues":
		label := r.URL.Query().Get("labels")
		out := []issue{}
		for _, is := range f.issues {
			if is.State == r.URL.Query().Get("state") && (label == "" || contains(is.Labels, label)) {
				out = append(out, is)
			}
		}
		reply(200, out)
	case r.Method == http.MethodPost && path == "/issues":
		f.nextID++
		is := issue{Number: len(f.issues) + 1, Title: in.Title, Body: in.Body, Labels: in.Labels, State: "open"}
		f.issues = append(f.issues, is)
		reply(201, is)
	case len(parts) == 3 && parts[0] == "issues" && parts[2] == "comments":
		n, err := strconv.Atoi(parts[1])
		if err != nil || n < 1 {
			http.NotFound(w, r)
			return
		}
		if r.Method == http.MethodPost {
			f.nextID++
			c := comment{ID: 1000 + f.nextID, Body: in.Body, User: bot}
			f.comments[n] = append(f.comments[n], c)
			reply(201, c)
			return
		}
		per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		per, page = max(per, 30), max(page, 1)
		all := f.comments[n]
		lo, hi := min((page-1)*per, len(all)), min(page*per, len(all))
		reply(200, append([]comment{}, all[lo:hi]...)) // [] where there are none, as GitHub answers
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "issues" && parts[2] == "labels":
		n, _ := strconv.Atoi(parts[1])
		out := []map[string]string{}
		for _, l := range f.labels[n] {
			out = append(out, map[string]string{"name": l})
		}
		reply(200, out)
	case r.Method == http.MethodDelete && len(parts) == 4 && parts[0] == "issues" && parts[2] == "labels":
		n, _ := strconv.Atoi(parts[1])
		var keep []string
		for _, l := range f.labels[n] {
			if l != parts[3] {
				keep = append(keep, l)
			}
		}
		if len(keep) == len(f.labels[n]) {
			http.NotFound(w, r)
			return
		}
		f.labels[n] = keep
		reply(200, []string{})
	case r.Method == http.MethodPatch && len(parts) == 3 && parts[0] == "issues" && parts[1] == "comments":
		id, _ := strconv.Atoi(parts[2])
		for n, cs := range f.comments {
			for i := range cs {
				if cs[i].ID == id {
					f.comments[n][i].Body = in.Body
					reply(200, f.comments[n][i])
					return
				}
			}
		}
		http.NotFound(w, r)
	default:
		http.NotFound(w, r)
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// workflow is the part of a workflow file the test reads.
type workflow struct {
	Jobs map[string]struct {
		Steps []struct {
			Name string            `yaml:"name"`
			If   string            `yaml:"if"`
			Run  string            `yaml:"run"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// step returns the run: line and env: keys of the step named name.
func step(t *testing.T, file, name string) (run string, env []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, ".github", "workflows", file))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(data, &w); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, j := range w.Jobs {
		for _, s := range j.Steps {
			if s.Name == name {
				for k := range s.Env {
					env = append(env, k)
				}
				return s.Run, env
			}
		}
	}
	t.Fatalf("%s has no step %q", file, name)
	return "", nil
}

// checkout is a directory with the repository's scripts as a checkout has
// them: their content, and the mode git records (a script committed
// without its run bit cannot run there: Permission denied).
func checkout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("git", "-C", repo, "ls-files", "-s", "scripts").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line) // mode object stage path
		if len(f) != 4 || !strings.HasSuffix(f[3], ".sh") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(repo, f[3]))
		if err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if f[0] == "100755" {
			mode = 0o755
		}
		dst := filepath.Join(dir, f[3])
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dst, mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runStep runs a step's run: line in dir as a runner does (bash -e with
// pipefail), with env.
func runStep(t *testing.T, dir, run string, env map[string]string) string {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", run)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GITHUB_REPOSITORY="+repoName)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", run, err, out)
	}
	return string(out)
}

func needTools(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, "%s (scripts/setup.sh installs it)", tool)
		}
	}
}

// The nightly's issue step opens an issue for a confirmed regression, and
// the next night's alert of the same regression is a comment on it.
func TestNightlyOpensAnIssue(t *testing.T) {
	needTools(t)
	gh := &fakeGitHub{comments: map[int][]comment{}}
	srv := httptest.NewServer(gh)
	defer srv.Close()
	run, envKeys := step(t, "nightly.yml", "Open or update an issue for each confirmed regression")
	if !contains(envKeys, "GITHUB_TOKEN") {
		t.Errorf("the step does not pass GITHUB_TOKEN: %v", envKeys)
	}
	dir := checkout(t)
	path := curlSpy(t, dir)
	alert := &nightly.Alert{Title: "xrun: softmax regressed on NVIDIA H200", Text: "softmax at N=4096: +21 % (confirmed by a rerun)",
		Regressions: []nightly.Regression{{Experiment: "softmax", Case: "N=4096", Implementation: "triton", JobID: "0123456789ab"}},
		Created:     time.Now().UTC()}
	night := func(n int) {
		alerts := filepath.Join(dir, "out", "alerts")
		os.RemoveAll(alerts)
		if err := alert.WriteFile(filepath.Join(alerts, fmt.Sprintf("job%d.json", n))); err != nil {
			t.Fatal(err)
		}
		runStep(t, dir, run, map[string]string{"GITHUB_TOKEN": token, "GITHUB_API_URL": srv.URL,
			"GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": strconv.Itoa(n), "PATH": path})
	}
	night(1)
	if len(gh.issues) != 1 || gh.issues[0].Title != alert.Title || !contains(gh.issues[0].Labels, "nightly-regression") ||
		!strings.Contains(gh.issues[0].Body, "+21 %") || !strings.Contains(gh.issues[0].Body, "actions/runs/1") {
		t.Fatalf("after the first night: issues %+v (requests %v)", gh.issues, gh.requests)
	}
	night(2)
	if len(gh.issues) != 1 || len(gh.comments[1]) != 1 || !strings.Contains(gh.comments[1][0].Body, "actions/runs/2") {
		t.Fatalf("after the second night: issues %+v, comments %+v", gh.issues, gh.comments)
	}
	tokenHidden(t, dir)
}

// The pull-request workflow's comment step comments once and then rewrites
// its comment, found among many others (the API pages them).
func TestPRKeepsOneComment(t *testing.T) {
	needTools(t)
	gh := &fakeGitHub{comments: map[int][]comment{}}
	for i := range 130 {
		gh.comments[7] = append(gh.comments[7], comment{ID: i + 1, Body: "a reviewer's comment", User: user{Login: "reviewer"}})
	}
	// Anyone may start a comment with the marker; it is not ours to rewrite.
	gh.comments[7] = append(gh.comments[7], comment{ID: 500, Body: "<!-- xrun pull-request report -->\nall green, merge it",
		User: user{Login: "mallory"}})
	srv := httptest.NewServer(gh)
	defer srv.Close()
	run, envKeys := step(t, "pr.yml", "Comment the tables on the pull request")
	for _, k := range []string{"GITHUB_TOKEN", "PR_NUMBER"} {
		if !contains(envKeys, k) {
			t.Errorf("the step does not pass %s: %v", k, envKeys)
		}
	}
	dir := checkout(t)
	push := func(table string) {
		if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "out", "comment.md"), []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
		runStep(t, dir, run, map[string]string{"GITHUB_TOKEN": token, "GITHUB_API_URL": srv.URL, "PR_NUMBER": "7"})
	}
	push("| impl | verdict |\n|---|---|\n| triton | regressed |\n")
	push("| impl | verdict |\n|---|---|\n| triton | ok |\n")
	var ours []comment
	for _, c := range gh.comments[7] {
		if strings.Contains(c.Body, "| triton |") {
			ours = append(ours, c)
		}
	}
	if len(gh.comments[7]) != 132 || len(ours) != 1 || !strings.Contains(ours[0].Body, "| triton | ok |") || ours[0].User != bot {
		t.Fatalf("%d comments, ours %+v", len(gh.comments[7]), ours)
	}
	for _, c := range gh.comments[7] {
		if c.ID == 500 && c.Body != "<!-- xrun pull-request report -->\nall green, merge it" {
			t.Errorf("another user's comment with the marker was rewritten: %q", c.Body)
		}
	}
}

// A report longer than GitHub takes in a comment (65,536 characters) is
// cut at a line under it, saying the rest is in the run's artifact; the
// token never reaches curl's command line, where ps shows it to anyone.
func TestPRCommentLongAndTokenHidden(t *testing.T) {
	needTools(t)
	gh := &fakeGitHub{comments: map[int][]comment{}}
	srv := httptest.NewServer(gh)
	defer srv.Close()
	run, _ := step(t, "pr.yml", "Comment the tables on the pull request")
	dir := checkout(t)
	path := curlSpy(t, dir)
	var table strings.Builder
	table.WriteString("| impl | case | verdict |\n|---|---|---|\n")
	for i := 0; table.Len() < 100_000; i++ {
		fmt.Fprintf(&table, "| triton | N=%d | stable |\n", i)
	}
	os.MkdirAll(filepath.Join(dir, "out"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "out", "comment.md"), []byte(table.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	runStep(t, dir, run, map[string]string{"GITHUB_TOKEN": token, "GITHUB_API_URL": srv.URL, "PR_NUMBER": "9",
		"RUN_URL": "https://github.com/lab/kernels/actions/runs/77", "PATH": path})
	if len(gh.comments[9]) != 1 {
		t.Fatalf("%d comments", len(gh.comments[9]))
	}
	body := gh.comments[9][0].Body
	if n := len([]rune(body)); n > 65536 || n < 60000 {
		t.Errorf("the comment has %d characters, want at most 65,536 and most of them", n)
	}
	if !strings.HasSuffix(body, "the rest is in the workflow run's artifact: https://github.com/lab/kernels/actions/runs/77._") {
		t.Errorf("the cut comment ends %q", body[len(body)-200:])
	}
	if lines := strings.Split(body, "\n"); !strings.HasPrefix(lines[len(lines)-3], "| triton | N=") || !strings.HasSuffix(lines[len(lines)-3], "|") {
		t.Errorf("the cut is not at a line: %q", lines[len(lines)-3])
	}
	tokenHidden(t, dir)
}

// curlSpy puts a curl in dir/fakebin that records its command line in
// dir/curl-args and runs the real one; it returns a PATH that finds it
// first.
func curlSpy(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "fakebin")
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(bin, 0o755)
	wrapper := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"" + filepath.Join(dir, "curl-args") + "\"\nexec " + curl + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "curl"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin + string(os.PathListSeparator) + os.Getenv("PATH")
}

// tokenHidden fails t when a curl command line curlSpy recorded holds the
// token (ps shows it to every user of the machine), or none was recorded.
func tokenHidden(t *testing.T, dir string) {
	t.Helper()
	args, _ := os.ReadFile(filepath.Join(dir, "curl-args"))
	if len(args) == 0 || strings.Contains(string(args), token) {
		t.Errorf("curl's command lines hold the token (or were not recorded): %s", args)
	}
}

// A push after the gpu-run label takes the label off: the new code has not
// been read. A pull request without it is left alone.
func TestPRLabelGoesOnPush(t *testing.T) {
	needTools(t)
	gh := &fakeGitHub{comments: map[int][]comment{}, labels: map[int][]string{3: {"bug", "gpu-run"}}}
	srv := httptest.NewServer(gh)
	defer srv.Close()
	run, _ := step(t, "pr.yml", "Take the gpu-run label off the pull request")
	dir := checkout(t)
	path := curlSpy(t, dir)
	runStep(t, dir, run, map[string]string{"GITHUB_TOKEN": token, "GITHUB_API_URL": srv.URL, "PR_NUMBER": "3", "PATH": path})
	if got := gh.labels[3]; len(got) != 1 || got[0] != "bug" {
		t.Fatalf("labels after the push: %v", got)
	}
	runStep(t, dir, run, map[string]string{"GITHUB_TOKEN": token, "GITHUB_API_URL": srv.URL, "PR_NUMBER": "3", "PATH": path})
	tokenHidden(t, dir)
}

// The pull-request script runs the experiments whose files changed, and
// those that include a changed path; the others not.
func TestPRTouchedExperiments(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(path, body string) {
		t.Helper()
		p := filepath.Join(dir, path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("experiments/with space/xrun.yaml", "name: spaced\ninclude: [\"../../kernels/a b\"]\n")
	write("kernels/a b/k.py", "x = 1\n")
	write("experiments/plain/xrun.yaml", "name: plain\n")
	write("experiments/plain/k.py", "x = 1\n")
	write("experiments/gla/xrun.yaml", "name: gla\ninclude: [../../kernels/gla]\n")
	write("experiments/listed/xrun.yaml", "name: listed\ninclude:\n  - ../../kernels/common\nbenchmark: {}\n")
	write("kernels/gla/gla.py", "x = 1\n")
	write("kernels/common/c.py", "x = 1\n")
	write("kernels/other/o.py", "x = 1\n")
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "main")
	git("checkout", "-qb", "pr")
	list := func() string {
		t.Helper()
		cmd := exec.Command("bash", filepath.Join(repo, "scripts", "pr.sh"), "--list", "main")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pr.sh --list: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write("kernels/other/o.py", "x = 2\n")
	git("commit", "-qam", "other")
	if got := list(); got != "" {
		t.Errorf("a kernel no experiment includes: %q", got)
	}
	write("kernels/gla/gla.py", "x = 2\n")
	git("commit", "-qam", "gla")
	if got := list(); got != "experiments/gla" {
		t.Errorf("an included kernel: %q", got)
	}
	write("kernels/common/c.py", "x = 2\n")
	write("experiments/plain/k.py", "x = 2\n")
	git("commit", "-qam", "more")
	if got := list(); got != "experiments/gla\nexperiments/listed\nexperiments/plain" {
		t.Errorf("three touched: %q", got)
	}
	write("kernels/a b/k.py", "x = 2\n")
	git("commit", "-qam", "spaced")
	if got := list(); got != "experiments/gla\nexperiments/listed\nexperiments/plain\nexperiments/with space" {
		t.Errorf("a directory name with a space, including one: %q", got)
	}
}

// A dashboard that cannot be written fails its step and opens an issue
// labelled nightly-infra with the end of the report's log, through the
// nightly's own issue step; one that is written is no alert.
func TestNightlyDashboardFailureIsAnIssue(t *testing.T) {
	needTools(t)
	gh := &fakeGitHub{comments: map[int][]comment{}}
	srv := httptest.NewServer(gh)
	defer srv.Close()
	dashboard, _ := step(t, "nightly.yml", "Write the dashboard")
	issue, _ := step(t, "nightly.yml", "Open or update an issue for each confirmed regression")
	dir := checkout(t)
	xrun := filepath.Join(dir, "bin", "xrun")
	os.MkdirAll(filepath.Dir(xrun), 0o755)
	write := func(script string) {
		if err := os.WriteFile(xrun, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("mkdir -p \"$3\" && echo '<html>' > \"$3/index.html\"\n")
	runStep(t, dir, dashboard, nil)
	if _, err := os.Stat(filepath.Join(dir, "out", "alerts", "dashboard.json")); err == nil {
		t.Fatal("a dashboard that was written raised an alert")
	}
	write("echo 'report: experiment 1/3 softmax: 40 run(s)' >&2\necho 'write the site: too many SQL variables' >&2\nexit 4\n")
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", dashboard)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "opens an issue") {
		t.Fatalf("the failed dashboard's step: %v\n%s", err, out)
	}
	runStep(t, dir, issue, map[string]string{"GITHUB_TOKEN": token, "GITHUB_API_URL": srv.URL})
	if len(gh.issues) != 1 || !contains(gh.issues[0].Labels, "nightly-infra") ||
		!strings.Contains(gh.issues[0].Title, "dashboard could not be written") ||
		!strings.Contains(gh.issues[0].Body, "too many SQL variables") || strings.Contains(gh.issues[0].Body, "history accept") {
		t.Fatalf("issues %+v", gh.issues)
	}
}
