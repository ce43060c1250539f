package connect

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/docker/cli/cli/connhelper"
	"github.com/docker/go-connections/tlsconfig"
	"github.com/moby/moby/client"
)

// MinAPIVersion is the oldest Engine API xrun supports (Docker 20.10).
const MinAPIVersion = "1.41"

// pingTimeout bounds the first contact, so a silent host fails in seconds;
// sshConnectTimeout bounds ssh's own TCP connect within it, so that an ssh
// host that does not answer is told as ssh's "Connection timed out" rather
// than as the ping's deadline.
const (
	pingTimeout       = 15 * time.Second
	sshConnectTimeout = 10
)

// ClientOptions returns the moby client options that reach t: the address,
// and for ssh:// a dialer running ssh, for tcp:// with TLS an HTTP client
// with the certificates. API version negotiation is included.
func (t DockerHost) ClientOptions() ([]client.Opt, error) {
	opts := []client.Opt{client.WithAPIVersionFromEnv()}
	switch {
	case strings.HasPrefix(t.Host, "ssh://"):
		helper, err := connhelper.GetConnectionHelperWithSSHOpts(t.Host, sshFlags(t.SSHOptions))
		if err != nil {
			return nil, fmt.Errorf("read ssh address of Docker host %s: %w (write it as ssh://USER@HOST[:PORT])", t, err)
		}
		// The docker CLI's wiring: every HTTP connection is one
		// `ssh HOST docker system dial-stdio` process.
		opts = append(opts,
			client.WithHTTPClient(&http.Client{Transport: &http.Transport{DialContext: helper.Dialer}}),
			client.WithHost(helper.Host),
			client.WithDialContext(helper.Dialer))
	case t.TLS != nil && strings.HasPrefix(t.Host, "tcp://"):
		cfg, err := tlsconfig.Client(tlsconfig.Options{
			CAFile:             t.TLS.CAFile,
			CertFile:           t.TLS.CertFile,
			KeyFile:            t.TLS.KeyFile,
			InsecureSkipVerify: !t.TLS.Verify,
			// Only the given CA vouches for the daemon, as in the docker CLI.
			ExclusiveRootPools: true,
			MinVersion:         tls.VersionTLS12,
		})
		if err != nil {
			return nil, fmt.Errorf("load TLS certificates for Docker host %s: %w (point DOCKER_CERT_PATH or cert_path at a directory with ca.pem, cert.pem and key.pem)", t, err)
		}
		opts = append(opts,
			client.WithHTTPClient(&http.Client{
				Transport:     &http.Transport{TLSClientConfig: cfg, Proxy: http.ProxyFromEnvironment},
				CheckRedirect: client.CheckRedirect,
			}),
			client.WithHost(t.Host))
	default:
		opts = append(opts, client.WithHost(t.Host))
	}
	return opts, nil
}

// sshFlags adds BatchMode (a password prompt would hang a background
// process; keys and agents still work) and a ConnectTimeout, each unless
// the user set it.
func sshFlags(user []string) []string {
	flags := append([]string(nil), user...)
	given := strings.Join(flags, " ")
	if !strings.Contains(given, "BatchMode") {
		flags = append(flags, "-o", "BatchMode=yes")
	}
	if !strings.Contains(given, "ConnectTimeout") {
		flags = append(flags, "-o", "ConnectTimeout="+strconv.Itoa(sshConnectTimeout))
	}
	return flags
}

// NewClient makes a client for t without contacting the daemon.
func NewClient(t DockerHost, extra ...client.Opt) (*client.Client, error) {
	opts, err := t.ClientOptions()
	if err != nil {
		return nil, err
	}
	cli, err := client.New(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("make a client for Docker host %s: %w", t, err)
	}
	return cli, nil
}

// Connect makes a client for t, pings the daemon, negotiates the API
// version and checks it is at least MinAPIVersion. Failures are a
// *HostError: one sentence naming the host and what to do.
func Connect(ctx context.Context, t DockerHost, extra ...client.Opt) (*client.Client, error) {
	cli, err := NewClient(t, extra...)
	if err != nil {
		return nil, err
	}
	if err := Check(ctx, t, cli); err != nil {
		cli.Close()
		return nil, err
	}
	return cli, nil
}

// Check pings the daemon behind cli with API version negotiation and
// checks the version; errors are classified as in Classify.
func Check(ctx context.Context, t DockerHost, cli *client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	ping, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return &HostError{Target: t, Kind: KindUnreachable, Reason: fmt.Sprintf("no answer within %s", pingTimeout), Err: err}
		}
		cerr := Classify(t, err)
		var he *HostError
		if errors.As(cerr, &he) && he.Kind == KindUnreachable && he.Reason == "" {
			// The SDK's "Cannot connect" keeps no cause: a dial of our own
			// finds it (connection refused, no route to host).
			he.Reason = dialCause(ctx, t.Host)
		}
		return cerr
	}
	if ping.APIVersion != "" && versionLess(ping.APIVersion, MinAPIVersion) {
		return &HostError{Target: t, Kind: KindAPITooOld, Reason: ping.APIVersion}
	}
	return nil
}

// versionLess compares dotted API versions numerically ("1.9" < "1.41").
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// dialCause is why a TCP connection to a tcp:// host's address fails, as
// the dial error says it ("dial tcp 10.0.0.1:2376: connect: connection
// refused"); "" for another kind of host, or when the connection opens.
func dialCause(ctx context.Context, host string) string {
	u, err := url.Parse(host)
	if err != nil || u.Scheme != "tcp" || u.Host == "" {
		return ""
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return shortReason(err.Error())
	}
	c.Close()
	return ""
}
