package cli

import (
	"os"
	"path/filepath"
	"testing"
)

func TestConfigPost(t *testing.T) {
	cfgHome := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cfgHome, "xrun"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgHome, "xrun", "config.yaml"), []byte("server:\n  url: http://10.0.0.5:8420/\n  token: xrun_cfg\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_CONFIG_HOME": cfgHome}
	a := &App{Getenv: func(k string) string { return env[k] }}
	p, err := a.configPost()
	if err != nil || p == nil || p.URL != "http://10.0.0.5:8420/api/v1/results" || p.Token != "xrun_cfg" {
		t.Fatalf("configPost = %+v, %v", p, err)
	}
	env["XRUN_POST_URL"] = "http://elsewhere/r"
	if p, err := a.configPost(); p != nil || err != nil {
		t.Errorf("with XRUN_POST_URL set: configPost = %+v, %v; want none (the shell wins)", p, err)
	}
	if got := postURL("https://xrun.lab/api/v1/results"); got != "https://xrun.lab/api/v1/results" {
		t.Errorf("postURL of the endpoint itself = %q", got)
	}
}
