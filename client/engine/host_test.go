package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveHost(t *testing.T) {
	dir := t.TempDir()
	writeContext(t, dir, "remote", `{"Name":"remote","Endpoints":{"docker":{"Host":"ssh://me@gpu-box","SkipTLSVerify":false}}}`, false)
	writeContext(t, dir, "secure", `{"Name":"secure","Endpoints":{"docker":{"Host":"tcp://10.0.0.5:2376","SkipTLSVerify":true}}}`, true)
	current := t.TempDir()
	writeContext(t, current, "remote", `{"Name":"remote","Endpoints":{"docker":{"Host":"ssh://me@gpu-box"}}}`, false)
	if err := os.WriteFile(filepath.Join(current, "config.json"), []byte(`{"currentContext":"remote"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		o       HostOptions
		env     map[string]string
		want    string
		ctx     string
		tls     *TLS
		wantErr string
	}{
		{name: "default", o: HostOptions{ConfigDir: dir}, want: DefaultHost},
		{name: "flag wins over env", o: HostOptions{Host: "tcp://a:2375", ConfigDir: dir}, env: map[string]string{"DOCKER_HOST": "tcp://b:2375"}, want: "tcp://a:2375"},
		{name: "bare host:port is tcp", o: HostOptions{Host: "a:2375", ConfigDir: dir}, want: "tcp://a:2375"},
		{name: "bare path is unix", o: HostOptions{Host: "/run/docker.sock", ConfigDir: dir}, want: "unix:///run/docker.sock"},
		{name: "DOCKER_HOST", o: HostOptions{ConfigDir: dir}, env: map[string]string{"DOCKER_HOST": "unix:///tmp/d.sock"}, want: "unix:///tmp/d.sock"},
		{name: "DOCKER_HOST wins over context", o: HostOptions{ConfigDir: dir}, env: map[string]string{"DOCKER_HOST": "tcp://b:2375", "DOCKER_CONTEXT": "remote"}, want: "tcp://b:2375"},
		{name: "TLS from env", o: HostOptions{Host: "tcp://a:2376", ConfigDir: dir}, env: map[string]string{"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": "/certs"}, want: "tcp://a:2376",
			tls: &TLS{CAFile: "/certs/ca.pem", CertFile: "/certs/cert.pem", KeyFile: "/certs/key.pem", Verify: true}},
		{name: "no TLS for unix", o: HostOptions{Host: "unix:///x.sock", ConfigDir: dir}, env: map[string]string{"DOCKER_TLS_VERIFY": "1"}, want: "unix:///x.sock"},
		{name: "context flag", o: HostOptions{Context: "remote", ConfigDir: dir}, want: "ssh://me@gpu-box", ctx: "remote"},
		{name: "DOCKER_CONTEXT", o: HostOptions{ConfigDir: dir}, env: map[string]string{"DOCKER_CONTEXT": "remote"}, want: "ssh://me@gpu-box", ctx: "remote"},
		{name: "current context from config.json", o: HostOptions{ConfigDir: current}, want: "ssh://me@gpu-box", ctx: "remote"},
		{name: "context default", o: HostOptions{Context: "default", ConfigDir: current}, want: DefaultHost},
		{name: "context TLS", o: HostOptions{Context: "secure", ConfigDir: dir}, want: "tcp://10.0.0.5:2376", ctx: "secure",
			tls: &TLS{CAFile: ctxTLS(dir, "secure", "ca.pem"), CertFile: ctxTLS(dir, "secure", "cert.pem"), KeyFile: ctxTLS(dir, "secure", "key.pem"), Verify: false}},
		{name: "unknown context", o: HostOptions{Context: "nope", ConfigDir: dir}, wantErr: `docker context "nope" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Getenv = func(k string) string { return tt.env[k] }
			ep, err := ResolveHost(tt.o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ep.Host != tt.want || ep.Context != tt.ctx {
				t.Errorf("got host %q context %q, want %q %q", ep.Host, ep.Context, tt.want, tt.ctx)
			}
			switch {
			case tt.tls == nil && ep.TLS != nil:
				t.Errorf("TLS = %+v, want none", *ep.TLS)
			case tt.tls != nil && (ep.TLS == nil || *ep.TLS != *tt.tls):
				t.Errorf("TLS = %+v, want %+v", ep.TLS, *tt.tls)
			}
		})
	}
}

func ctxTLS(dir, name, file string) string {
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(dir, "contexts", "tls", hex.EncodeToString(sum[:]), "docker", file)
}

func writeContext(t *testing.T, dir, name, meta string, withTLS bool) {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	m := filepath.Join(dir, "contexts", "meta", id)
	if err := os.MkdirAll(m, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m, "meta.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	if withTLS {
		d := filepath.Join(dir, "contexts", "tls", id, "docker")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
			if err := os.WriteFile(filepath.Join(d, f), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}
