package connect

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/docker/cli/opts"
)

// DefaultHost is the local daemon socket.
const DefaultHost = "unix:///var/run/docker.sock"

// DockerHost is a resolved daemon: where it is, how to reach it, and the name
// that messages and progress lines use for it.
type DockerHost struct {
	// Name is what the user called the host: a named host from the config
	// file, a docker context, or the address itself.
	Name string
	// Host is the daemon address: unix://..., tcp://host:port, ssh://user@host[:port].
	Host string
	// Context is the docker context the address came from, if any.
	Context string
	// TLS secures a tcp:// address when non-nil.
	TLS *TLS
	// SSHOptions are extra arguments for ssh (ssh:// addresses only),
	// such as "-i", "key" or "-F", "config".
	SSHOptions []string
	// FakeGPUs, when positive, is a configured GPU inventory used instead
	// of asking the host. It exists for tests of GPU assignment on hosts
	// without GPUs and must not be used for real hosts.
	FakeGPUs int
	// Slurm are the Slurm options a named host declares for the jobs
	// submitted through it as a login node (nil: none).
	Slurm *SlurmOptions
}

// TLS locates the client certificate material for a tcp:// address. Empty
// file names are left out (a CA alone verifies the daemon; no client
// certificate is then presented).
type TLS struct {
	CAFile, CertFile, KeyFile string
	// Verify checks the daemon's certificate against CAFile (or the
	// system roots when CAFile is empty).
	Verify bool
}

// String is the display form: "name (address)" when they differ.
func (t DockerHost) String() string {
	if t.Name == "" || t.Name == t.Host {
		return t.Host
	}
	return fmt.Sprintf("%s (%s)", t.Name, t.Host)
}

// HostOptions are the inputs of host resolution.
type HostOptions struct {
	Host    string // --host
	Context string // --context
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
	// DockerConfigDir is the docker config dir (default $DOCKER_CONFIG or ~/.docker).
	DockerConfigDir string
	// ConfigFile is xrun's config file (default $XDG_CONFIG_HOME/xrun/config.yaml).
	ConfigFile string
}

func (o HostOptions) getenv(k string) string {
	if o.Getenv != nil {
		return o.Getenv(k)
	}
	return os.Getenv(k)
}

func (o HostOptions) dockerConfigDir() string {
	if o.DockerConfigDir != "" {
		return o.DockerConfigDir
	}
	if d := o.getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	home := o.getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".docker")
}

func (o HostOptions) configFile() string {
	if o.ConfigFile != "" {
		return o.ConfigFile
	}
	if d := o.getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "xrun", "config.yaml")
	}
	home := o.getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".config", "xrun", "config.yaml")
}

// The Docker daemon a command talks to is picked the way the docker CLI
// picks it (Resolve), and its Engine API client options made for it.
//
// Order: --host (an address, or the name of a host in xrun's config file),
// then DOCKER_HOST, then --context, DOCKER_CONTEXT or the docker config's
// current context, then the local socket. As in the docker CLI, --host and
// --context together are an error, and an explicit --context wins over
// DOCKER_HOST. Addresses are unix://, tcp:// (TLS from DOCKER_TLS_VERIFY,
// DOCKER_TLS and DOCKER_CERT_PATH, from the context's TLS material, or from
// the named host's entry) and ssh://user@host[:port], which runs
// `ssh ... docker system dial-stdio` through docker/cli's connhelper.
//
// Resolve picks the daemon for one command.
func Resolve(o HostOptions) (DockerHost, error) {
	if o.Host != "" && o.Context != "" {
		return DockerHost{}, fmt.Errorf("both --host %q and --context %q given: pick one", o.Host, o.Context)
	}
	switch {
	case o.Host != "":
		return resolveHost(o, o.Host)
	case o.Context != "":
		return resolveContext(o, o.Context)
	case o.getenv("DOCKER_HOST") != "":
		return fromAddress(o, o.getenv("DOCKER_HOST"))
	case o.getenv("DOCKER_CONTEXT") != "":
		return resolveContext(o, o.getenv("DOCKER_CONTEXT"))
	}
	name, err := currentContext(o.dockerConfigDir())
	if err != nil {
		return DockerHost{}, err
	}
	if name != "" {
		return resolveContext(o, name)
	}
	return DockerHost{Name: DefaultHost, Host: DefaultHost}, nil
}

// resolveHost reads a --host value: a named host from the config file, or
// an address in any form the docker CLI accepts.
func resolveHost(o HostOptions, h string) (DockerHost, error) {
	cfg, err := LoadConfig(o.configFile())
	if err != nil {
		return DockerHost{}, err
	}
	if nh, ok := cfg.Hosts[h]; ok {
		return nh.target(o, h)
	}
	if !strings.Contains(h, "://") && !strings.HasPrefix(h, "/") && !strings.Contains(h, ":") {
		return DockerHost{}, fmt.Errorf("unknown host %q: give an address (unix://PATH, tcp://HOST:PORT, ssh://USER@HOST) or one of the hosts named in %s%s",
			h, o.configFile(), cfg.namesHint())
	}
	t, err := fromAddress(o, h)
	if err != nil {
		return DockerHost{}, err
	}
	return inherit(o, cfg, t), nil
}

// inherit gives an address the settings the user configured for it
// elsewhere: a named host with the same address (its name, TLS, ssh
// options), or else a docker context with the same endpoint (its TLS
// material). A job records its host as an address or a name, and this is
// what lets `xrun logs JOB` reach a TLS host from a context later.
func inherit(o HostOptions, cfg Config, t DockerHost) DockerHost {
	if t.TLS != nil || len(t.SSHOptions) > 0 {
		return t
	}
	names := make([]string, 0, len(cfg.Hosts))
	for n := range cfg.Hosts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if nh := cfg.Hosts[n]; nh.Host != "" {
			if nt, err := nh.target(o, n); err == nil && nt.Host == t.Host {
				return nt
			}
		}
	}
	if !strings.HasPrefix(t.Host, "tcp://") {
		return t
	}
	metas, _ := filepath.Glob(filepath.Join(o.dockerConfigDir(), "contexts", "meta", "*", "meta.json"))
	for _, m := range metas {
		data, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var meta contextMeta
		if json.Unmarshal(data, &meta) != nil || meta.Name == "" {
			continue
		}
		if ct, err := resolveContext(o, meta.Name); err == nil && ct.Host == t.Host && ct.TLS != nil {
			t.TLS = ct.TLS
			t.Context = ct.Context
			return t
		}
	}
	return t
}

// fromAddress normalizes an address and adds TLS from the environment.
func fromAddress(o HostOptions, addr string) (DockerHost, error) {
	if strings.HasPrefix(addr, "/") {
		addr = "unix://" + addr
	}
	tlsOn := o.getenv("DOCKER_TLS") != "" || truthy(o.getenv("DOCKER_TLS_VERIFY"))
	host, err := opts.ParseHost(tlsOn, addr)
	if err != nil {
		return DockerHost{}, fmt.Errorf("read Docker host %q: %w", addr, err)
	}
	t := DockerHost{Name: host, Host: host}
	if tlsOn && strings.HasPrefix(host, "tcp://") {
		dir := o.getenv("DOCKER_CERT_PATH")
		if dir == "" {
			dir = o.dockerConfigDir()
		}
		t.TLS = tlsFromDir(dir, truthy(o.getenv("DOCKER_TLS_VERIFY")))
	}
	return t, nil
}

// truthy follows the docker CLI: DOCKER_TLS_VERIFY set to anything but ""
// enables verification ("0" and "false" included, as docker does).
func truthy(v string) bool { return v != "" }

// tlsFromDir uses ca.pem, cert.pem and key.pem of dir where they exist.
func tlsFromDir(dir string, verify bool) *TLS {
	t := &TLS{Verify: verify}
	if p := filepath.Join(dir, "ca.pem"); exists(p) {
		t.CAFile = p
	}
	if c, k := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"); exists(c) && exists(k) {
		t.CertFile, t.KeyFile = c, k
	}
	return t
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Ref is the string that selects t again with --host: the name of a
// named host, else the address (an address described by a named host or
// a docker context gets their settings back, see Resolve). Job records
// keep it so later commands reach the same daemon the same way.
func (t DockerHost) Ref() string {
	if t.Name != "" && !strings.Contains(t.Name, "://") && t.Context != t.Name {
		return t.Name
	}
	return t.Host
}
