package job

import (
	"slices"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/contract"
)

// The config's server is where the runner posts when the shell names no
// URL; a URL in the shell wins, with the shell's token alone; a token in
// the shell replaces the config's for the config's server. The token is
// never among the container's variables.
func TestRequestPostTarget(t *testing.T) {
	dir := experiment(t)
	cfg := &PostTarget{URL: "https://xrun.lab.example/api/v1/results", Token: "xrun_config"}
	for _, c := range []struct {
		name           string
		shell          map[string]string
		post           *PostTarget
		wantURL, token string
	}{
		{name: "config only", post: cfg, wantURL: cfg.URL, token: "xrun_config"},
		{name: "no config, no shell"},
		{name: "shell URL wins", shell: map[string]string{contract.EnvPostURL: "http://other:1/r"}, post: cfg, wantURL: "http://other:1/r"},
		{name: "shell URL and token", shell: map[string]string{contract.EnvPostURL: "http://other:1/r", contract.EnvPostToken: "xrun_shell"}, post: cfg,
			wantURL: "http://other:1/r", token: "xrun_shell"},
		{name: "shell token, config URL", shell: map[string]string{contract.EnvPostToken: "xrun_shell"}, post: cfg, wantURL: cfg.URL, token: "xrun_shell"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newSubmitEnv(t)
			for k, v := range c.shell {
				e.env[k] = v
			}
			r := e.request(t, dir, Args{CPU: true, Post: c.post})
			var urls []string
			for _, kv := range r.Job.Env {
				if name, v, _ := strings.Cut(kv, "="); name == contract.EnvPostURL {
					urls = append(urls, v)
				}
				if strings.HasPrefix(kv, contract.EnvPostToken+"=") || strings.Contains(kv, "xrun_") {
					t.Errorf("the token is in the job's environment: %q", kv)
				}
			}
			var want []string
			if c.wantURL != "" {
				want = []string{c.wantURL}
			}
			if !slices.Equal(urls, want) {
				t.Errorf("%s in the job's environment: %q, want %q", contract.EnvPostURL, urls, want)
			}
			if r.Job.PostToken != c.token {
				t.Errorf("the runner's token is %q, want %q", r.Job.PostToken, c.token)
			}
		})
	}
}
