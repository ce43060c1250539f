package connect

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

// currentContext reads currentContext from the docker config dir's
// config.json; a missing file means no context is set.
func currentContext(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read docker config: %w", err)
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("read docker config %s: %w (fix or remove the file)", filepath.Join(dir, "config.json"), err)
	}
	return cfg.CurrentContext, nil
}

// contextMeta is the part of the docker CLI's contexts/meta/<id>/meta.json
// that names the daemon.
type contextMeta struct {
	Name      string `json:"Name"`
	Endpoints map[string]struct {
		Host          string `json:"Host"`
		SkipTLSVerify bool   `json:"SkipTLSVerify"`
	} `json:"Endpoints"`
}

// contextID is the directory name the docker CLI stores a context under.
func contextID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// resolveContext reads a context from the docker CLI's store: the address
// from contexts/meta/<sha256(name)>/meta.json and the TLS material from
// contexts/tls/<sha256(name)>/docker/{ca,cert,key}.pem. The context named
// "default" is DOCKER_HOST or the local socket, as in the docker CLI.
func resolveContext(o HostOptions, name string) (DockerHost, error) {
	if name == "default" {
		if h := o.getenv("DOCKER_HOST"); h != "" {
			return fromAddress(o, h)
		}
		return DockerHost{Name: DefaultHost, Host: DefaultHost, Context: name}, nil
	}
	dir := o.dockerConfigDir()
	id := contextID(name)
	metaPath := filepath.Join(dir, "contexts", "meta", id, "meta.json")
	data, err := os.ReadFile(metaPath)
	if errors.Is(err, os.ErrNotExist) {
		return DockerHost{}, fmt.Errorf("docker context %q not found in %s: list the contexts with `docker context ls`", name, dir)
	}
	if err != nil {
		return DockerHost{}, fmt.Errorf("read docker context %q: %w", name, err)
	}
	var meta contextMeta
	if err := json.Unmarshal(data, &meta); err != nil {
		return DockerHost{}, fmt.Errorf("read docker context %q from %s: %w", name, metaPath, err)
	}
	ep, ok := meta.Endpoints["docker"]
	if !ok || ep.Host == "" {
		return DockerHost{}, fmt.Errorf("docker context %q has no docker endpoint: recreate it with `docker context create %s --docker host=...`", name, name)
	}
	host := ep.Host
	if strings.HasPrefix(host, "/") {
		host = "unix://" + host
	}
	t := DockerHost{Name: name, Host: host, Context: name}
	tlsDir := filepath.Join(dir, "contexts", "tls", id, "docker")
	if strings.HasPrefix(host, "tcp://") && (exists(filepath.Join(tlsDir, "ca.pem")) || exists(filepath.Join(tlsDir, "cert.pem"))) {
		t.TLS = tlsFromDir(tlsDir, !ep.SkipTLSVerify)
	} else if strings.HasPrefix(host, "tcp://") && ep.SkipTLSVerify {
		// A context may ask for TLS without verification and no files.
		t.TLS = &TLS{Verify: false}
	}
	return t, nil
}
