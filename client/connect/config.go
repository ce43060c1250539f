package connect

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Config is the hosts section of xrun's config file
// ($XDG_CONFIG_HOME/xrun/config.yaml):
//
//	hosts:
//	  lab:
//	    host: ssh://me@gpu1
//	    ssh_options: [-i, ~/.ssh/lab_key]
//	  cloud:
//	    host: tcp://203.0.113.7:2376
//	    cert_path: ~/.config/xrun/certs/cloud   # ca.pem, cert.pem, key.pem
//	  desk:
//	    context: desk                           # a docker context
//
// Other top-level keys of the file belong to other parts of xrun and are
// left alone here.
type Config struct {
	Hosts map[string]NamedHost `yaml:"hosts"`
}

// NamedHost is one entry under hosts:.
type NamedHost struct {
	// Host is the daemon address (unix://, tcp://, ssh://).
	Host string `yaml:"host"`
	// Context names a docker context instead of an address.
	Context string `yaml:"context"`
	// CertPath is a directory with ca.pem, cert.pem and key.pem for tcp://.
	CertPath string `yaml:"cert_path"`
	// TLSVerify checks the daemon's certificate (default true when
	// cert_path is set).
	TLSVerify *bool `yaml:"tls_verify"`
	// SSHOptions are extra ssh arguments for ssh:// hosts.
	SSHOptions []string `yaml:"ssh_options"`
	// GPUs is a GPU inventory to use instead of asking the host. It is
	// for tests of GPU assignment on machines without GPUs only: on a
	// real host the inventory is always learned from nvidia-smi.
	GPUs int `yaml:"gpus"`
	// Slurm are the sbatch options of the jobs submitted through this
	// host as a Slurm login node (xrun submit --slurm --login NAME), where
	// the command line and XRUN_SLURM_* leave them unset.
	Slurm *SlurmOptions `yaml:"slurm"`
}

// SlurmOptions are a Slurm cluster's defaults in xrun's config (the flags of
// xrun submit --slurm of the same names).
type SlurmOptions struct {
	Partition  string `yaml:"partition"`
	Account    string `yaml:"account"`
	QOS        string `yaml:"qos"`
	Constraint string `yaml:"constraint"`
	Python     string `yaml:"python"`
	Dir        string `yaml:"dir"`
	Runtime    string `yaml:"runtime"`
	// Sbatch are more sbatch options for every job (submit --sbatch).
	Sbatch []string `yaml:"sbatch"`
}

// LoadConfig reads the hosts section of path; a missing file is an empty
// config. Unknown keys inside hosts: are errors naming the line.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("read xrun config: %w", err)
	}
	// Other top-level keys land in rest; keys inside a host entry are
	// checked strictly, so a typo is reported with its line.
	var file struct {
		Hosts map[string]NamedHost `yaml:"hosts"`
		Rest  map[string]yaml.Node `yaml:",inline"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("read xrun config %s: %w (allowed keys of a host: host, context, cert_path, tls_verify, ssh_options, gpus, slurm; of its slurm: partition, account, qos, constraint, python, dir, runtime)", path, err)
	}
	cfg := Config{Hosts: file.Hosts}
	for name, h := range cfg.Hosts {
		if (h.Host == "") == (h.Context == "") {
			return Config{}, fmt.Errorf("read xrun config %s: host %q needs exactly one of host: (an address) or context: (a docker context)", path, name)
		}
		if h.GPUs < 0 {
			return Config{}, fmt.Errorf("read xrun config %s: host %q: gpus must be 0 or more", path, name)
		}
	}
	return cfg, nil
}

// namesHint lists the configured names for an error message.
func (c Config) namesHint() string {
	if len(c.Hosts) == 0 {
		return " (none are configured)"
	}
	names := make([]string, 0, len(c.Hosts))
	for n := range c.Hosts {
		names = append(names, n)
	}
	sort.Strings(names)
	return " (" + strings.Join(names, ", ") + ")"
}

// target turns a named host into a Target called by its name.
func (h NamedHost) target(o HostOptions, name string) (DockerHost, error) {
	var t DockerHost
	var err error
	if h.Context != "" {
		t, err = resolveContext(o, h.Context)
	} else {
		t, err = fromAddress(o, h.Host)
	}
	if err != nil {
		return DockerHost{}, fmt.Errorf("host %q: %w", name, err)
	}
	t.Name = name
	if h.CertPath != "" {
		verify := h.TLSVerify == nil || *h.TLSVerify
		t.TLS = tlsFromDir(expandHome(o, h.CertPath), verify)
	} else if h.TLSVerify != nil && t.TLS != nil {
		t.TLS.Verify = *h.TLSVerify
	}
	for _, s := range h.SSHOptions {
		t.SSHOptions = append(t.SSHOptions, expandHome(o, s))
	}
	t.FakeGPUs = h.GPUs
	if h.Slurm != nil {
		o := *h.Slurm
		t.Slurm = &o
	}
	return t, nil
}

func expandHome(o HostOptions, p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home := o.getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		return filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	return p
}

// Server is the server: section of xrun's config: the xrun serve that the
// runner of every job submitted from here posts its results.json to
// (docs/server.md).
//
//	server:
//	  url: https://xrun.lab.example
//	  token_file: ~/.config/xrun/post-token   # a post token; or token: xrun_...
//	  read_token_file: ~/.config/xrun/read-token  # for --server; or read_token:
type Server struct {
	// URL is the server's address, http:// or https://.
	URL string `yaml:"url"`
	// Token is a post token, written in the file itself; TokenFile names
	// a file that holds one instead, which can be kept apart (mode 600).
	Token     string `yaml:"token"`
	TokenFile string `yaml:"token_file"`
	// ReadToken and ReadTokenFile are a read token, for the readers'
	// --server of this server (xrun history, regress, compare, results,
	// report).
	ReadToken     string `yaml:"read_token"`
	ReadTokenFile string `yaml:"read_token_file"`
}

// ConfigPath is xrun's config file as Resolve reads it: $XDG_CONFIG_HOME's
// xrun/config.yaml, else ~/.config/xrun/config.yaml.
func ConfigPath(getenv func(string) string) string {
	return HostOptions{Getenv: getenv}.configFile()
}

// LoadServer reads the server section of path: nil when the file or the
// section is missing. Unknown keys inside server: are errors naming the
// line.
func LoadServer(path string) (*Server, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read xrun config: %w", err)
	}
	var file struct {
		Server *Server              `yaml:"server"`
		Rest   map[string]yaml.Node `yaml:",inline"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read xrun config %s: %w (allowed keys of server: url, token, token_file, read_token, read_token_file)", path, err)
	}
	s := file.Server
	if s == nil {
		return nil, nil
	}
	u, err := url.Parse(s.URL)
	if s.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("read xrun config %s: server: give url: the server's http:// or https:// address (https://xrun.lab.example)", path)
	}
	if u.User != nil || u.RawQuery != "" {
		return nil, fmt.Errorf("read xrun config %s: server: url has user info or a query, which would be in every job's environment: give the token as token: or token_file:", path)
	}
	if s.Token != "" && s.TokenFile != "" || s.Token == "" && s.TokenFile == "" && s.ReadToken == "" && s.ReadTokenFile == "" {
		return nil, fmt.Errorf("read xrun config %s: server: give exactly one of token: (a post token, xrun serve token add --scope post NAME) or token_file: (a file that holds one)", path)
	}
	if s.ReadToken != "" && s.ReadTokenFile != "" {
		return nil, fmt.Errorf("read xrun config %s: server: give one of read_token: and read_token_file:, not both", path)
	}
	return s, nil
}

// HasPostToken reports whether the section names a post token (a
// section may hold a read token alone, for a machine that only reads).
func (s Server) HasPostToken() bool { return s.Token != "" || s.TokenFile != "" }

// PostToken is the server's post token: Token, or the contents of
// TokenFile (~ is the home directory; a relative path is the config
// file's directory's) without surrounding white space.
func (s Server) PostToken(configPath string, getenv func(string) string) (string, error) {
	return secretOf(configPath, getenv, s.Token, s.TokenFile, "token_file", "post")
}

// ReaderToken is the server's read token, ReadToken or the contents of
// ReadTokenFile, as PostToken reads its own; "" when the section has
// none.
func (s Server) ReaderToken(configPath string, getenv func(string) string) (string, error) {
	if s.ReadToken == "" && s.ReadTokenFile == "" {
		return "", nil
	}
	return secretOf(configPath, getenv, s.ReadToken, s.ReadTokenFile, "read_token_file", "read")
}

func secretOf(configPath string, getenv func(string) string, inline, file, key, scope string) (string, error) {
	if inline != "" {
		return strings.TrimSpace(inline), nil
	}
	p := expandHome(HostOptions{Getenv: getenv}, file)
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(configPath), p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("read the server's %s of xrun config %s: %w (write the %s token there, or give it inline instead)", key, configPath, err, scope)
	}
	t := strings.TrimSpace(string(data))
	if t == "" {
		return "", fmt.Errorf("the server's %s %s of xrun config %s is empty: write the %s token there (xrun serve token add --scope %s NAME prints one)", key, p, configPath, scope, scope)
	}
	return t, nil
}
