package engine

import "github.com/moby/moby/client"

// FromClient wraps a client made elsewhere (client/hosts makes them for
// named hosts, ssh options and TLS material); host is what Host reports
// and what a job records to reach the daemon again.
func FromClient(host string, cli *client.Client) *Docker {
	return &Docker{ep: Endpoint{Host: host}, cli: cli}
}
