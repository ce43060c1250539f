package connect

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Kind says what went wrong reaching a host.
type Kind int

// Kinds of host failures.
const (
	KindUnreachable Kind = iota // nothing answered, or the connection broke
	KindSSHAuth                 // ssh refused our credentials
	KindSSHHostKey              // ssh does not know or trust the host key
	KindSSHNoDocker             // the remote side has no docker CLI for dial-stdio
	KindTLSVerify               // the TLS handshake failed verification
	KindTLSRequired             // the daemon speaks TLS and we did not
	KindAPITooOld               // the daemon's Engine API is older than MinAPIVersion
)

// HostError is a failure to reach or use a Docker host. Its message is
// one sentence naming the host, the reason and what to do.
type HostError struct {
	Target DockerHost
	Kind   Kind
	// Reason is the short cause: the ssh or network message, the x509
	// error, or the daemon's API version.
	Reason string
	Err    error
}

func (e *HostError) Error() string {
	h := e.Target.String()
	switch e.Kind {
	case KindSSHAuth:
		return fmt.Sprintf("ssh to Docker host %s was refused (%s): add your public key to the remote ~/.ssh/authorized_keys (ssh-copy-id) or name a key with ssh_options: [-i, KEY] in the xrun config", h, e.Reason)
	case KindSSHHostKey:
		return fmt.Sprintf("ssh to Docker host %s failed host key verification (%s): check the host's fingerprint, then add it to ~/.ssh/known_hosts (ssh-keyscan)", h, e.Reason)
	case KindSSHNoDocker:
		return fmt.Sprintf("Docker host %s has no docker CLI on the remote PATH (%s), which ssh:// needs for `docker system dial-stdio`: install Docker there", h, e.Reason)
	case KindTLSVerify:
		return fmt.Sprintf("TLS verification of Docker host %s failed (%s): point DOCKER_CERT_PATH (or cert_path in the xrun config) at the ca.pem that signed the daemon's certificate and a client cert.pem/key.pem it trusts", h, e.Reason)
	case KindTLSRequired:
		return fmt.Sprintf("Docker host %s expects TLS (%s): set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH, or use a docker context with TLS material", h, e.Reason)
	case KindAPITooOld:
		return fmt.Sprintf("Docker host %s speaks Engine API %s, older than the %s (Docker 20.10) xrun needs: upgrade Docker on that host", h, e.Reason, MinAPIVersion)
	}
	if strings.HasPrefix(e.Target.Host, "ssh://") {
		return fmt.Sprintf("Docker host %s did not answer over ssh (%s): check that `%s docker version` works from here (host up, name and port right, no firewall in the way)", h, e.Reason, sshCommand(e.Target.Host))
	}
	if e.Reason == "" {
		return fmt.Sprintf("cannot reach the Docker daemon at %s: check that the host is up and its daemon running, or pick another with --host or DOCKER_HOST", h)
	}
	return fmt.Sprintf("cannot reach the Docker daemon at %s (%s): check that the host is up and its daemon running, or pick another with --host or DOCKER_HOST", h, e.Reason)
}

// sshCommand is the ssh command line that reaches an ssh:// address.
func sshCommand(addr string) string {
	u, err := url.Parse(addr)
	if err != nil || u.Hostname() == "" {
		return "ssh " + strings.TrimPrefix(addr, "ssh://")
	}
	dest := u.Hostname()
	if u.User != nil {
		dest = u.User.Username() + "@" + dest
	}
	if p := u.Port(); p != "" {
		return "ssh -p " + p + " " + dest
	}
	return "ssh " + dest
}

func (e *HostError) Unwrap() error { return e.Err }

var (
	stderrRE     = regexp.MustCompile(`stderr=(?s)(.*)$`)
	apiTooOldRE  = regexp.MustCompile(`API version (\S+) is not supported`)
	oldServerRE  = regexp.MustCompile(`(?i)client version \S+ is too new\. Maximum supported API version is (\S+)`)
	sshErrSuffix = regexp.MustCompile(`\s+$`)
)

// Classify turns an error from contacting t into a *HostError with the
// right kind and a short reason. nil stays nil.
func Classify(t DockerHost, err error) error {
	if err == nil {
		return nil
	}
	var he *HostError
	if errors.As(err, &he) {
		return err
	}
	msg := err.Error()
	e := &HostError{Target: t, Kind: KindUnreachable, Err: err}

	if strings.HasPrefix(t.Host, "ssh://") {
		if m := stderrRE.FindStringSubmatch(msg); m != nil {
			stderr := lastLine(m[1])
			switch {
			case strings.Contains(stderr, "Permission denied"), strings.Contains(stderr, "Too many authentication failures"):
				e.Kind = KindSSHAuth
			case strings.Contains(stderr, "Host key verification failed"), strings.Contains(stderr, "REMOTE HOST IDENTIFICATION HAS CHANGED"), strings.Contains(stderr, "No ED25519 host key is known"), strings.Contains(stderr, "host key for"):
				e.Kind = KindSSHHostKey
			case strings.Contains(stderr, "docker: command not found"), strings.Contains(stderr, "docker: not found"):
				e.Kind = KindSSHNoDocker
			}
			if stderr != "" {
				e.Reason = stderr
				return e
			}
		}
	}

	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verify):
		e.Kind = KindTLSVerify
	case strings.Contains(msg, "x509:"), strings.Contains(msg, "tls: bad certificate"),
		strings.Contains(msg, "tls: certificate required"), strings.Contains(msg, "tls: unknown certificate authority"),
		strings.Contains(msg, "remote error: tls:"):
		e.Kind = KindTLSVerify
	case strings.Contains(msg, "HTTP request to an HTTPS server"):
		e.Kind = KindTLSRequired
		e.Reason = "it answered plain HTTP with a request for HTTPS"
		return e
	}
	if m := apiTooOldRE.FindStringSubmatch(msg); m != nil {
		e.Kind, e.Reason = KindAPITooOld, m[1]
		return e
	}
	if m := oldServerRE.FindStringSubmatch(msg); m != nil {
		e.Kind, e.Reason = KindAPITooOld, m[1]
		return e
	}
	e.Reason = shortReason(msg)
	return e
}

// shortReason keeps the innermost cause of a long wrapped network error.
func shortReason(msg string) string {
	msg = strings.TrimSpace(msg)
	if i := strings.Index(msg, ". Is the docker daemon running?"); i > 0 {
		msg = msg[:i]
	}
	// The SDK's "Cannot connect to the Docker daemon at HOST" repeats what
	// the message around it says: no reason is better than the same twice.
	if strings.HasPrefix(msg, "Cannot connect to the Docker daemon at ") {
		return ""
	}
	// "error during connect: Get "http://...": dial tcp 127.0.0.1:1:
	// connect: connection refused": the dial error says it all.
	if i := strings.LastIndex(msg, "dial "); i >= 0 {
		msg = msg[i:]
	} else if i := strings.LastIndex(msg, "\": "); i > 0 {
		msg = msg[i+3:]
	}
	return sshErrSuffix.ReplaceAllString(msg, "")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return strings.TrimSuffix(l, ".")
		}
	}
	return ""
}
