package connect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// dockerConfig writes a docker config dir with a current context and two
// contexts, one with TLS material.
func dockerConfig(t *testing.T, current string) string {
	t.Helper()
	dir := t.TempDir()
	if current != "" {
		writeFile(t, filepath.Join(dir, "config.json"), fmt.Sprintf(`{"auths":{},"currentContext":%q}`, current))
	}
	addContext := func(name, host string, skip bool, tls bool) {
		id := contextID(name)
		writeFile(t, filepath.Join(dir, "contexts", "meta", id, "meta.json"),
			fmt.Sprintf(`{"Name":%q,"Metadata":{},"Endpoints":{"docker":{"Host":%q,"SkipTLSVerify":%v}}}`, name, host, skip))
		if tls {
			for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
				writeFile(t, filepath.Join(dir, "contexts", "tls", id, "docker", f), "x")
			}
		}
	}
	addContext("lab-ssh", "ssh://me@gpu1", false, false)
	addContext("cloud", "tcp://203.0.113.7:2376", false, true)
	addContext("cloud-insecure", "tcp://203.0.113.8:2376", true, true)
	return dir
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestResolve(t *testing.T) {
	certs := t.TempDir()
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		writeFile(t, filepath.Join(certs, f), "x")
	}
	cfgDir := t.TempDir()
	writeFile(t, filepath.Join(cfgDir, "xrun", "config.yaml"), `
defaults: {anything: goes}   # other parts of xrun own other keys
hosts:
  lab:
    host: ssh://me@gpu1:2222
    ssh_options: [-i, ~/.ssh/lab]
  cloud:
    host: tcp://203.0.113.7:2376
    cert_path: `+certs+`
  viactx:
    context: cloud
  fake4:
    host: unix:///tmp/fake.sock
    gpus: 4
  login:
    host: ssh://me@login.hpc
    slurm: {partition: gpu, account: lab, qos: short, runtime: docker}
`)
	dockerDir := dockerConfig(t, "lab-ssh")
	ctxTLS := filepath.Join(dockerDir, "contexts", "tls", contextID("cloud"), "docker")
	ctxTLS2 := filepath.Join(dockerDir, "contexts", "tls", contextID("cloud-insecure"), "docker")

	tests := []struct {
		name    string
		o       HostOptions
		env     map[string]string
		want    DockerHost
		wantErr string
	}{
		{name: "current context", o: HostOptions{}, want: DockerHost{Name: "lab-ssh", Host: "ssh://me@gpu1", Context: "lab-ssh"}},
		{name: "--host wins over DOCKER_HOST and the context", o: HostOptions{Host: "unix:///run/other.sock"}, env: map[string]string{"DOCKER_HOST": "tcp://1.2.3.4:2375"},
			want: DockerHost{Name: "unix:///run/other.sock", Host: "unix:///run/other.sock"}},
		{name: "DOCKER_HOST wins over DOCKER_CONTEXT", env: map[string]string{"DOCKER_HOST": "tcp://1.2.3.4:2375", "DOCKER_CONTEXT": "cloud"},
			want: DockerHost{Name: "tcp://1.2.3.4:2375", Host: "tcp://1.2.3.4:2375"}},
		{name: "--context wins over DOCKER_HOST", o: HostOptions{Context: "cloud"}, env: map[string]string{"DOCKER_HOST": "tcp://1.2.3.4:2375"},
			want: DockerHost{Name: "cloud", Host: "tcp://203.0.113.7:2376", Context: "cloud",
				TLS: &TLS{CAFile: filepath.Join(ctxTLS, "ca.pem"), CertFile: filepath.Join(ctxTLS, "cert.pem"), KeyFile: filepath.Join(ctxTLS, "key.pem"), Verify: true}}},
		{name: "context skipping verification", o: HostOptions{Context: "cloud-insecure"},
			want: DockerHost{Name: "cloud-insecure", Host: "tcp://203.0.113.8:2376", Context: "cloud-insecure",
				TLS: &TLS{CAFile: filepath.Join(ctxTLS2, "ca.pem"), CertFile: filepath.Join(ctxTLS2, "cert.pem"), KeyFile: filepath.Join(ctxTLS2, "key.pem"), Verify: false}}},
		{name: "DOCKER_CONTEXT", env: map[string]string{"DOCKER_CONTEXT": "default"},
			want: DockerHost{Name: DefaultHost, Host: DefaultHost, Context: "default"}},
		{name: "TLS from the environment", o: HostOptions{Host: "tcp://10.0.0.1:2376"}, env: map[string]string{"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": certs},
			want: DockerHost{Name: "tcp://10.0.0.1:2376", Host: "tcp://10.0.0.1:2376",
				TLS: &TLS{CAFile: filepath.Join(certs, "ca.pem"), CertFile: filepath.Join(certs, "cert.pem"), KeyFile: filepath.Join(certs, "key.pem"), Verify: true}}},
		{name: "DOCKER_TLS without verification", o: HostOptions{Host: "tcp://10.0.0.1:2376"}, env: map[string]string{"DOCKER_TLS": "1", "DOCKER_CERT_PATH": t.TempDir()},
			want: DockerHost{Name: "tcp://10.0.0.1:2376", Host: "tcp://10.0.0.1:2376", TLS: &TLS{}}},
		{name: "a bare word must be a named host", o: HostOptions{Host: "gpu1"}, wantErr: "unknown host"},
		{name: "host:port", o: HostOptions{Host: "10.0.0.1:2375"}, want: DockerHost{Name: "tcp://10.0.0.1:2375", Host: "tcp://10.0.0.1:2375"}},
		{name: "bare path is a socket", o: HostOptions{Host: "/run/d.sock"}, want: DockerHost{Name: "unix:///run/d.sock", Host: "unix:///run/d.sock"}},
		{name: "named ssh host", o: HostOptions{Host: "lab"}, env: map[string]string{"HOME": "/home/me"},
			want: DockerHost{Name: "lab", Host: "ssh://me@gpu1:2222", SSHOptions: []string{"-i", "/home/me/.ssh/lab"}}},
		{name: "named TLS host", o: HostOptions{Host: "cloud"},
			want: DockerHost{Name: "cloud", Host: "tcp://203.0.113.7:2376",
				TLS: &TLS{CAFile: filepath.Join(certs, "ca.pem"), CertFile: filepath.Join(certs, "cert.pem"), KeyFile: filepath.Join(certs, "key.pem"), Verify: true}}},
		{name: "named host through a context", o: HostOptions{Host: "viactx"},
			want: DockerHost{Name: "viactx", Host: "tcp://203.0.113.7:2376", Context: "cloud",
				TLS: &TLS{CAFile: filepath.Join(ctxTLS, "ca.pem"), CertFile: filepath.Join(ctxTLS, "cert.pem"), KeyFile: filepath.Join(ctxTLS, "key.pem"), Verify: true}}},
		{name: "named host with a test inventory", o: HostOptions{Host: "fake4"}, want: DockerHost{Name: "fake4", Host: "unix:///tmp/fake.sock", FakeGPUs: 4}},
		{name: "a Slurm login node with its options", o: HostOptions{Host: "login"}, want: DockerHost{Name: "login", Host: "ssh://me@login.hpc",
			Slurm: &SlurmOptions{Partition: "gpu", Account: "lab", QOS: "short", Runtime: "docker"}}},
		{name: "unknown name", o: HostOptions{Host: "nosuch"}, wantErr: `unknown host "nosuch"`},
		{name: "unknown context", o: HostOptions{Context: "nosuch"}, wantErr: `docker context "nosuch" not found`},
		{name: "--host and --context", o: HostOptions{Host: "lab", Context: "cloud"}, wantErr: "pick one"},
		{name: "bad scheme", o: HostOptions{Host: "http://x:1"}, wantErr: "invalid bind address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			env := map[string]string{"XDG_CONFIG_HOME": cfgDir}
			for k, v := range tc.env {
				env[k] = v
			}
			o.Getenv = func(k string) string { return env[k] }
			o.DockerConfigDir = dockerDir
			got, err := Resolve(o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error containing %q, got %v (%+v)", tc.wantErr, err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v %+v\nwant %+v %+v", got, got.TLS, tc.want, tc.want.TLS)
			}
		})
	}
}

func TestResolveDefault(t *testing.T) {
	o := HostOptions{Getenv: func(string) string { return "" }, DockerConfigDir: t.TempDir(), ConfigFile: filepath.Join(t.TempDir(), "none.yaml")}
	got, err := Resolve(o)
	if err != nil || got.Host != DefaultHost {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"typo in a host", "hosts:\n  lab:\n    hots: ssh://x\n", "line 3: field hots not found"},
		{"neither host nor context", "hosts:\n  lab:\n    gpus: 2\n", "exactly one of host"},
		{"both", "hosts:\n  lab: {host: ssh://x, context: c}\n", "exactly one of host"},
		{"negative gpus", "hosts:\n  lab: {host: ssh://x, gpus: -1}\n", "gpus must be 0 or more"},
		{"not yaml", "hosts: [\n", "read xrun config"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "config.yaml")
			writeFile(t, p, tc.yaml)
			_, err := LoadConfig(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	ssh := DockerHost{Name: "lab", Host: "ssh://me@gpu1"}
	tcp := DockerHost{Name: "tcp://h:2376", Host: "tcp://h:2376"}
	connErr := func(stderr string) error {
		return fmt.Errorf("error during connect: Get \"http://docker.example.com/_ping\": command [ssh -o BatchMode=yes -- me@gpu1 docker system dial-stdio] has exited with exit status 255, make sure the URL is valid, and Docker 18.09 or later is installed on the remote host: stderr=%s", stderr)
	}
	tests := []struct {
		name   string
		t      DockerHost
		err    error
		kind   Kind
		reason string
	}{
		{"ssh auth", ssh, connErr("me@gpu1: Permission denied (publickey).\n"), KindSSHAuth, "me@gpu1: Permission denied (publickey)"},
		{"ssh host key", ssh, connErr("Host key verification failed.\n"), KindSSHHostKey, "Host key verification failed"},
		{"ssh no route", ssh, connErr("ssh: connect to host gpu1 port 22: No route to host\r\n"), KindUnreachable, "ssh: connect to host gpu1 port 22: No route to host"},
		{"ssh no docker", ssh, connErr("bash: line 1: docker: command not found\n"), KindSSHNoDocker, "bash: line 1: docker: command not found"},
		{"tls unknown CA", tcp, errors.New(`error during connect: Get "https://h:2376/_ping": tls: failed to verify certificate: x509: certificate signed by unknown authority`), KindTLSVerify, "tls: failed to verify certificate: x509: certificate signed by unknown authority"},
		{"client cert refused", tcp, errors.New(`error during connect: Get "https://h:2376/_ping": remote error: tls: bad certificate`), KindTLSVerify, "remote error: tls: bad certificate"},
		{"api too old", tcp, errors.New("API version 1.24 is not supported by this client: the minimum supported API version is 1.40"), KindAPITooOld, "1.24"},
		{"refused", tcp, errors.New(`error during connect: Get "http://h:2376/_ping": dial tcp 10.0.0.1:2376: connect: connection refused`), KindUnreachable, "dial tcp 10.0.0.1:2376: connect: connection refused"},
		{"sdk's own words", tcp, errors.New("Cannot connect to the Docker daemon at tcp://h:2376. Is the docker daemon running?"), KindUnreachable, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var he *HostError
			if !errors.As(Classify(tc.t, tc.err), &he) {
				t.Fatal("not a HostError")
			}
			if he.Kind != tc.kind || he.Reason != tc.reason {
				t.Fatalf("got kind %d reason %q, want %d %q", he.Kind, he.Reason, tc.kind, tc.reason)
			}
			msg := he.Error()
			if !strings.Contains(msg, tc.t.Name) || strings.Contains(msg, "\n") {
				t.Fatalf("message must be one line naming the host: %q", msg)
			}
			if strings.Count(strings.ToLower(msg), "connect to the docker daemon")+strings.Count(msg, "reach the Docker daemon") > 1 || strings.Contains(msg, "()") {
				t.Fatalf("message says it twice: %q", msg)
			}
			if !errors.Is(he, tc.err) {
				t.Fatal("the cause is not wrapped")
			}
		})
	}
}

// TestCheckAPITooOld talks to a server that answers like Docker 19.03.
func TestCheckAPITooOld(t *testing.T) {
	for _, tc := range []struct {
		version string
		ok      bool
	}{{"1.40", false}, {"1.41", true}, {"1.52", true}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Api-Version", tc.version)
			w.Header().Set("Ostype", "linux")
			w.Write([]byte("OK"))
		}))
		host := "tcp://" + strings.TrimPrefix(srv.URL, "http://")
		_, err := Connect(context.Background(), DockerHost{Name: "old", Host: host})
		srv.Close()
		var he *HostError
		if tc.ok {
			if err != nil {
				t.Fatalf("API %s: %v", tc.version, err)
			}
			continue
		}
		if !errors.As(err, &he) || he.Kind != KindAPITooOld || !strings.Contains(err.Error(), "Engine API "+tc.version) {
			t.Fatalf("API %s: want too old, got %v", tc.version, err)
		}
	}
}

func TestVersionLess(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{{"1.40", "1.41", true}, {"1.41", "1.41", false}, {"1.9", "1.41", true}, {"1.52", "1.41", false}, {"2.0", "1.41", false}}
	for _, tc := range tests {
		if got := versionLess(tc.a, tc.b); got != tc.want {
			t.Errorf("versionLess(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}

// An ssh host that does not answer is named, with the command to check it.
func TestSSHUnreachableMessage(t *testing.T) {
	e := &HostError{Target: DockerHost{Name: "ssh://me@gpu1:2222", Host: "ssh://me@gpu1:2222"}, Kind: KindUnreachable, Reason: "no answer within 15s"}
	want := "Docker host ssh://me@gpu1:2222 did not answer over ssh (no answer within 15s): check that `ssh -p 2222 me@gpu1 docker version` works from here (host up, name and port right, no firewall in the way)"
	if got := e.Error(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestSSHFlags(t *testing.T) {
	if got := sshFlags([]string{"-i", "k"}); !reflect.DeepEqual(got, []string{"-i", "k", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"}) {
		t.Fatalf("got %v", got)
	}
	if got := sshFlags([]string{"-o", "BatchMode=no", "-o", "ConnectTimeout=3"}); !reflect.DeepEqual(got, []string{"-o", "BatchMode=no", "-o", "ConnectTimeout=3"}) {
		t.Fatalf("got %v", got)
	}
}

// TestResolveInherits: an address that a named host or a docker context
// describes gets their settings, so a job recorded by address re-resolves.
func TestResolveInherits(t *testing.T) {
	cfgDir := t.TempDir()
	writeFile(t, filepath.Join(cfgDir, "xrun", "config.yaml"), "hosts:\n  lab:\n    host: ssh://me@gpu1\n    ssh_options: [-p, \"2200\"]\n")
	dockerDir := dockerConfig(t, "")
	env := map[string]string{"XDG_CONFIG_HOME": cfgDir}
	o := HostOptions{Getenv: func(k string) string { return env[k] }, DockerConfigDir: dockerDir}

	o.Host = "ssh://me@gpu1"
	got, err := Resolve(o)
	if err != nil || got.Name != "lab" || !reflect.DeepEqual(got.SSHOptions, []string{"-p", "2200"}) {
		t.Fatalf("named host by address: %+v, %v", got, err)
	}
	o.Host = "tcp://203.0.113.7:2376"
	got, err = Resolve(o)
	if err != nil || got.TLS == nil || !got.TLS.Verify || got.Context != "cloud" || got.Name != "tcp://203.0.113.7:2376" {
		t.Fatalf("context by address: %+v %+v, %v", got, got.TLS, err)
	}
	o.Host = "tcp://198.51.100.1:2375"
	got, err = Resolve(o)
	if err != nil || got.TLS != nil {
		t.Fatalf("unknown address: %+v, %v", got, err)
	}
}

func TestRef(t *testing.T) {
	tests := []struct {
		t    DockerHost
		want string
	}{
		{DockerHost{Name: "lab", Host: "ssh://me@gpu1"}, "lab"},
		{DockerHost{Name: "cloud", Host: "tcp://h:2376", Context: "cloud"}, "tcp://h:2376"},
		{DockerHost{Name: "tcp://h:2376", Host: "tcp://h:2376"}, "tcp://h:2376"},
		{DockerHost{Name: "viactx", Host: "tcp://h:2376", Context: "cloud"}, "viactx"},
	}
	for _, tc := range tests {
		if got := tc.t.Ref(); got != tc.want {
			t.Errorf("%+v: Ref = %q, want %q", tc.t, got, tc.want)
		}
	}
}

// docs/gpu-host.md names the Engine API and Docker release xrun checks for.
func TestGPUHostDocNamesMinAPIVersion(t *testing.T) {
	b, err := os.ReadFile("../../docs/gpu-host.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "API "+MinAPIVersion+"+, Docker 20.10") {
		t.Errorf("docs/gpu-host.md does not name API %s (Docker 20.10)", MinAPIVersion)
	}
}

// A tcp:// host where nothing listens: the message gives the cause (the
// SDK's own error drops it).
func TestUnreachableTCPSaysWhy(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, err = Connect(context.Background(), DockerHost{Host: "tcp://" + addr})
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "tcp://"+addr) {
		t.Errorf("err = %v", err)
	}
}
