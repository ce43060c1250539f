package workflowtest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// anyWorkflow is a workflow file as data: its triggers, permissions and
// jobs.
type anyWorkflow struct {
	On          yaml.Node         `yaml:"on"`
	Permissions yaml.Node         `yaml:"permissions"`
	Jobs        map[string]anyJob `yaml:"jobs"`
}

type anyJob struct {
	RunsOn      yaml.Node `yaml:"runs-on"`
	If          string    `yaml:"if"`
	Permissions yaml.Node `yaml:"permissions"`
	Steps       []struct {
		Name string            `yaml:"name"`
		Uses string            `yaml:"uses"`
		Run  string            `yaml:"run"`
		With map[string]string `yaml:"with"`
		Env  map[string]string `yaml:"env"`
	} `yaml:"steps"`
}

// events are the names a workflow is triggered by.
func events(n yaml.Node) []string {
	switch n.Kind {
	case yaml.ScalarNode:
		return []string{n.Value}
	case yaml.SequenceNode:
		var out []string
		for _, c := range n.Content {
			out = append(out, c.Value)
		}
		return out
	case yaml.MappingNode:
		var out []string
		for i := 0; i < len(n.Content); i += 2 {
			out = append(out, n.Content[i].Value)
		}
		return out
	}
	return nil
}

// labels are the labels of a job's runs-on.
func labels(n yaml.Node) []string { return events(n) }

// writes says which scopes a permissions block may write ("write-all" is
// every scope).
func writes(n yaml.Node) []string {
	if n.Kind == yaml.ScalarNode {
		if n.Value == "write-all" {
			return []string{"write-all"}
		}
		return nil
	}
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i+1].Value == "write" {
			out = append(out, n.Content[i].Value)
		}
	}
	return out
}

func workflows(t *testing.T) map[string]anyWorkflow {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(repo, ".github", "workflows", "*.yml"))
	if len(files) == 0 {
		t.Fatal("no workflow files")
	}
	out := map[string]anyWorkflow{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var w anyWorkflow
		if err := yaml.Unmarshal(data, &w); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = w
	}
	return out
}

// The self-hosted runner (the GPU host's keys, its Docker hosts, main's
// history) runs only what the default branch says:
//   - no workflow a pull request triggers with its own copy of the file
//     (pull_request and the like) has a job on it;
//   - a workflow with a job on it is triggered by a schedule, a maintainer
//     (workflow_dispatch), a push, or pull_request_target (the base
//     branch's copy), and nothing else;
//   - under pull_request_target, that job waits for a maintainer's gpu-run
//     label, writes nothing, reads no secret, checks the pull request out
//     without credentials into a folder of its own, and runs tools of the
//     base branch's checkout, never the pull request's.
func TestPullRequestsStayOffTheSelfHostedRunner(t *testing.T) {
	trusted := []string{"schedule", "workflow_dispatch", "push", "pull_request_target"}
	for name, w := range workflows(t) {
		evs := events(w.On)
		if len(evs) == 0 {
			t.Errorf("%s: no triggers read", name)
		}
		for jobName, j := range w.Jobs {
			if !slices.Contains(labels(j.RunsOn), "self-hosted") {
				continue
			}
			where := name + " job " + jobName
			for _, ev := range evs {
				if !slices.Contains(trusted, ev) {
					t.Errorf("%s runs on the self-hosted runner and is triggered by %s: a pull request's copy of the file would run there", where, ev)
				}
			}
			if !slices.Contains(evs, "pull_request_target") {
				continue
			}
			if !strings.Contains(j.If, "github.event.label.name == 'gpu-run'") {
				t.Errorf("%s does not wait for the gpu-run label (if: %q)", where, j.If)
			}
			if j.Permissions.Kind == 0 {
				t.Errorf("%s sets no permissions of its own (it would get the workflow's)", where)
			}
			if ws := writes(j.Permissions); len(ws) > 0 {
				t.Errorf("%s may write %v", where, ws)
			}
			for _, s := range j.Steps {
				all := s.Run
				for _, v := range s.Env {
					all += " " + v
				}
				for _, v := range s.With {
					all += " " + v
				}
				if strings.Contains(all, "secrets.") {
					t.Errorf("%s step %q reads a secret", where, s.Name)
				}
				if strings.HasPrefix(s.Uses, "actions/checkout") {
					if s.With["persist-credentials"] != "false" {
						t.Errorf("%s checks out with credentials left in .git (step %q)", where, s.Name)
					}
					if strings.Contains(s.With["ref"], "pull") && (s.With["path"] == "" || s.With["path"] == "base") {
						t.Errorf("%s checks the pull request out where the tools are (step %q, path %q)", where, s.Name, s.With["path"])
					}
				}
				if s.Run != "" && !strings.Contains(s.Run, "base") {
					t.Errorf("%s runs %q, not a tool of the base branch's checkout", where, s.Run)
				}
			}
		}
		if slices.Contains(evs, "pull_request_target") {
			if ws := writes(w.Permissions); len(ws) > 0 || w.Permissions.Kind == 0 {
				t.Errorf("%s: a pull_request_target workflow's default permissions must write nothing (permissions: {}); got %v", name, ws)
			}
		}
	}
}

// The policy test above fails on the workflow a fork could defeat: one
// if: on a pull_request job.
func TestThePolicyCatchesAForkableWorkflow(t *testing.T) {
	bad := `
on:
  pull_request:
permissions:
  contents: read
  pull-requests: write
jobs:
  judge:
    if: github.event.pull_request.head.repo.full_name == github.repository
    runs-on: [self-hosted, xrun]
    steps:
      - uses: actions/checkout@v4
      - run: scripts/pr.sh out
`
	var w anyWorkflow
	if err := yaml.Unmarshal([]byte(bad), &w); err != nil {
		t.Fatal(err)
	}
	if evs := events(w.On); !slices.Equal(evs, []string{"pull_request"}) {
		t.Fatalf("triggers %v", evs)
	}
	if !slices.Contains(labels(w.Jobs["judge"].RunsOn), "self-hosted") {
		t.Fatal("the bad job's runner is not read as self-hosted")
	}
	if ws := writes(w.Permissions); !slices.Equal(ws, []string{"pull-requests"}) {
		t.Fatalf("writes %v", ws)
	}
}
