package connect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadServer(t *testing.T) {
	path := writeConfig(t, "hosts:\n  lab:\n    host: ssh://me@gpu1\nserver:\n  url: https://xrun.lab.example\n  token_file: post-token\n")
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "post-token"), []byte("xrun_abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadServer(path)
	if err != nil || s == nil || s.URL != "https://xrun.lab.example" {
		t.Fatalf("LoadServer = %+v, %v", s, err)
	}
	if tok, err := s.PostToken(path, nil); err != nil || tok != "xrun_abc" {
		t.Errorf("PostToken = %q, %v; want the file's token without its newline", tok, err)
	}
	// The hosts of the same file still load.
	if cfg, err := LoadConfig(path); err != nil || cfg.Hosts["lab"].Host != "ssh://me@gpu1" {
		t.Errorf("LoadConfig beside server: = %+v, %v", cfg, err)
	}

	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "tok"), []byte("xrun_home"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = &Server{URL: "http://x", TokenFile: "~/tok"}
	if tok, err := s.PostToken(path, func(k string) string { return map[string]string{"HOME": home}[k] }); err != nil || tok != "xrun_home" {
		t.Errorf("PostToken of ~/tok = %q, %v", tok, err)
	}
	s = &Server{URL: "http://x", TokenFile: "missing"}
	if _, err := s.PostToken(path, nil); err == nil || !strings.Contains(err.Error(), "token_file") {
		t.Errorf("a missing token file: %v", err)
	}

	if s, err := LoadServer(writeConfig(t, "hosts: {}\n")); s != nil || err != nil {
		t.Errorf("a config without server: = %+v, %v; want nil, nil", s, err)
	}
	if s, err := LoadServer(filepath.Join(t.TempDir(), "none.yaml")); s != nil || err != nil {
		t.Errorf("no config file = %+v, %v; want nil, nil", s, err)
	}
}

// A section may hold a read token, beside a post token or alone (a
// machine that only reads).
func TestLoadServerReadToken(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "read"), []byte("xrun_read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte("server:\n  url: https://x\n  read_token_file: read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadServer(path)
	if err != nil || s.HasPostToken() {
		t.Fatalf("LoadServer = %+v, %v; want a section with a read token alone", s, err)
	}
	if tok, err := s.ReaderToken(path, nil); err != nil || tok != "xrun_read" {
		t.Errorf("ReaderToken = %q, %v", tok, err)
	}
	s = &Server{URL: "https://x", Token: "xrun_post"}
	if tok, err := s.ReaderToken(path, nil); err != nil || tok != "" {
		t.Errorf("ReaderToken of a section without one = %q, %v", tok, err)
	}
	s = &Server{URL: "https://x", ReadTokenFile: "missing"}
	if _, err := s.ReaderToken(path, nil); err == nil || !strings.Contains(err.Error(), "read_token_file") {
		t.Errorf("ReaderToken of a missing file: %v", err)
	}
}

func TestLoadServerRefuses(t *testing.T) {
	for text, want := range map[string]string{
		"server:\n  url: https://x\n  tokn: a\n":                             "allowed keys of server",
		"server:\n  token: a\n":                                              "give url:",
		"server:\n  url: xrun.lab:8420\n  token: a\n":                        "give url:",
		"server:\n  url: https://x\n":                                        "exactly one of token:",
		"server:\n  url: https://x\n  token: a\n  token_file: b\n":           "exactly one of token:",
		"server:\n  url: https://u:p@x\n  token: a\n":                        "user info",
		"server:\n  url: https://x/?token=xrun_a\n  token: a\n":              "user info or a query",
		"server:\n  url: https://x\n  read_token: a\n  read_token_file: b\n": "not both",
	} {
		_, err := LoadServer(writeConfig(t, text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", text, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "xrun_a") {
			t.Errorf("%q: the error shows the token: %v", text, err)
		}
	}
}
