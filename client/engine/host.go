package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultHost is the local daemon socket.
const DefaultHost = "unix:///var/run/docker.sock"

// Endpoint is a resolved daemon address and how to talk to it.
type Endpoint struct {
	Host string // unix://..., tcp://..., ssh://user@host
	// Context is the docker context the endpoint came from, if any.
	Context string
	// TLS, when non-nil, secures a tcp:// endpoint.
	TLS *TLS
}

// TLS locates the client certificates for a tcp:// endpoint.
type TLS struct {
	CAFile, CertFile, KeyFile string
	// Verify checks the daemon's certificate against CAFile.
	Verify bool
}

// HostOptions are the inputs to host resolution, in the order they win.
type HostOptions struct {
	Host    string // --host
	Context string // --context
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
	// ConfigDir is the docker config dir (default $DOCKER_CONFIG or ~/.docker).
	ConfigDir string
}

// ResolveHost picks the daemon the way the docker CLI does: --host, then
// DOCKER_HOST, then --context, DOCKER_CONTEXT or the config's current
// context, then the local socket.
func ResolveHost(o HostOptions) (Endpoint, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	tlsFromEnv := func(ep Endpoint) Endpoint {
		if !strings.HasPrefix(ep.Host, "tcp://") {
			return ep
		}
		certPath := getenv("DOCKER_CERT_PATH")
		verify := getenv("DOCKER_TLS_VERIFY") != "" && getenv("DOCKER_TLS_VERIFY") != "0"
		if certPath == "" && !verify {
			return ep
		}
		if certPath == "" {
			certPath = configDir(o, getenv)
		}
		ep.TLS = &TLS{
			CAFile:   filepath.Join(certPath, "ca.pem"),
			CertFile: filepath.Join(certPath, "cert.pem"),
			KeyFile:  filepath.Join(certPath, "key.pem"),
			Verify:   verify,
		}
		return ep
	}
	if o.Host != "" {
		return tlsFromEnv(Endpoint{Host: normalizeHost(o.Host)}), nil
	}
	if h := getenv("DOCKER_HOST"); h != "" {
		return tlsFromEnv(Endpoint{Host: normalizeHost(h)}), nil
	}
	name := o.Context
	if name == "" {
		name = getenv("DOCKER_CONTEXT")
	}
	dir := configDir(o, getenv)
	if name == "" {
		name = currentContext(dir)
	}
	if name == "" || name == "default" {
		return Endpoint{Host: DefaultHost}, nil
	}
	return contextEndpoint(dir, name)
}

func configDir(o HostOptions, getenv func(string) string) string {
	if o.ConfigDir != "" {
		return o.ConfigDir
	}
	if d := getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".docker"
	}
	return filepath.Join(home, ".docker")
}

// normalizeHost accepts "host:port" and a bare path as the docker CLI does.
func normalizeHost(h string) string {
	switch {
	case strings.Contains(h, "://"):
		return h
	case strings.HasPrefix(h, "/"):
		return "unix://" + h
	}
	return "tcp://" + h
}

func currentContext(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return ""
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if json.Unmarshal(data, &cfg) != nil {
		return ""
	}
	return cfg.CurrentContext
}

// contextEndpoint reads a context from the docker CLI's context store:
// contexts/meta/<sha256(name)>/meta.json, and TLS files under
// contexts/tls/<sha256(name)>/docker/.
func contextEndpoint(dir, name string) (Endpoint, error) {
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	data, err := os.ReadFile(filepath.Join(dir, "contexts", "meta", id, "meta.json"))
	if errors.Is(err, os.ErrNotExist) {
		return Endpoint{}, fmt.Errorf("docker context %q not found in %s: list them with `docker context ls`", name, dir)
	}
	if err != nil {
		return Endpoint{}, fmt.Errorf("read docker context %q: %w", name, err)
	}
	var meta struct {
		Endpoints map[string]struct {
			Host          string `json:"Host"`
			SkipTLSVerify bool   `json:"SkipTLSVerify"`
		} `json:"Endpoints"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return Endpoint{}, fmt.Errorf("read docker context %q: %w", name, err)
	}
	d, ok := meta.Endpoints["docker"]
	if !ok || d.Host == "" {
		return Endpoint{}, fmt.Errorf("docker context %q has no docker endpoint", name)
	}
	ep := Endpoint{Host: normalizeHost(d.Host), Context: name}
	tlsDir := filepath.Join(dir, "contexts", "tls", id, "docker")
	if _, err := os.Stat(filepath.Join(tlsDir, "cert.pem")); err == nil {
		ep.TLS = &TLS{
			CAFile:   filepath.Join(tlsDir, "ca.pem"),
			CertFile: filepath.Join(tlsDir, "cert.pem"),
			KeyFile:  filepath.Join(tlsDir, "key.pem"),
			Verify:   !d.SkipTLSVerify,
		}
	}
	return ep, nil
}
