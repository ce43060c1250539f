//go:build integration

package connect_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/internal/testenv"
)

// runEcho runs a busybox container that prints a line and returns it, so
// that the whole path (create, start, wait, logs, remove) is exercised.
func runEcho(t *testing.T, cli *client.Client, msg string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: testenv.BusyboxImage, Cmd: []string{"sh", "-c", "echo " + msg}},
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	defer cli.ContainerRemove(context.WithoutCancel(ctx), created.ID, client.ContainerRemoveOptions{Force: true})
	wait := cli.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start: %v", err)
	}
	select {
	case r := <-wait.Result:
		if r.StatusCode != 0 {
			t.Fatalf("container exited %d", r.StatusCode)
		}
	case err := <-wait.Error:
		t.Fatalf("wait: %v", err)
	}
	logs, err := cli.ContainerLogs(ctx, created.ID, client.ContainerLogsOptions{ShowStdout: true})
	if err != nil {
		t.Fatalf("logs: %v", err)
	}
	defer logs.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, io.Discard, logs); err != nil {
		t.Fatalf("read logs: %v", err)
	}
	return strings.TrimSpace(out.String())
}

func TestRemoteHosts(t *testing.T) {
	testenv.RequireDocker(t)
	d := testenv.StartDaemon(t)
	s := testenv.StartSSHD(t)
	testenv.EnsureBusybox(t, testenv.LocalHost)
	testenv.EnsureBusybox(t, d.Socket)
	ctx := context.Background()

	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	cases := []struct {
		name string
		o    connect.HostOptions
		ssh  []string
	}{
		{"unix socket of the second daemon", connect.HostOptions{Host: d.Socket, Getenv: env(nil)}, nil},
		{"tcp with TLS from DOCKER_CERT_PATH", connect.HostOptions{Host: d.TCP, Getenv: env(map[string]string{"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": d.CertDir})}, nil},
		{"tcp with TLS from DOCKER_HOST", connect.HostOptions{Getenv: env(map[string]string{"DOCKER_HOST": d.TCP, "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": d.CertDir})}, nil},
		{"ssh to the local daemon", connect.HostOptions{Host: s.Host, Getenv: env(nil)}, s.Options},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target, err := connect.Resolve(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			target.SSHOptions = tc.ssh
			cli, err := connect.Connect(ctx, target)
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			if got := runEcho(t, cli, "hello-"+strings.Fields(tc.name)[0]); got != "hello-"+strings.Fields(tc.name)[0] {
				t.Fatalf("container printed %q", got)
			}
		})
	}

	t.Run("wrong CA is refused", func(t *testing.T) {
		target, err := connect.Resolve(connect.HostOptions{Host: d.TCP, Getenv: env(map[string]string{"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": d.WrongCADir})})
		if err != nil {
			t.Fatal(err)
		}
		_, err = connect.Connect(ctx, target)
		var he *connect.HostError
		if !errors.As(err, &he) || he.Kind != connect.KindTLSVerify {
			t.Fatalf("want a TLS verification error, got %v", err)
		}
		if !strings.Contains(err.Error(), d.TCP) || !strings.Contains(err.Error(), "TLS verification") {
			t.Fatalf("message does not name the host and the cause: %v", err)
		}
		t.Log(err)
	})
	t.Run("plain HTTP to the TLS port asks for TLS", func(t *testing.T) {
		_, err := connect.Connect(ctx, connect.DockerHost{Name: d.TCP, Host: d.TCP})
		var he *connect.HostError
		if !errors.As(err, &he) || (he.Kind != connect.KindTLSRequired && he.Kind != connect.KindTLSVerify) {
			t.Fatalf("want a TLS error, got %v", err)
		}
		t.Log(err)
	})
	t.Run("ssh with a key the server refuses", func(t *testing.T) {
		_, err := connect.Connect(ctx, connect.DockerHost{Name: "lab", Host: s.Host, SSHOptions: s.BadKeyOptions})
		var he *connect.HostError
		if !errors.As(err, &he) || he.Kind != connect.KindSSHAuth {
			t.Fatalf("want an ssh auth error, got %v", err)
		}
		if !strings.Contains(err.Error(), "lab") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("message should be one line naming the host: %q", err)
		}
		t.Log(err)
	})
	t.Run("ssh to a host not in known_hosts", func(t *testing.T) {
		_, err := connect.Connect(ctx, connect.DockerHost{Name: s.Host, Host: s.Host, SSHOptions: s.UnknownHostOptions})
		var he *connect.HostError
		if !errors.As(err, &he) || he.Kind != connect.KindSSHHostKey {
			t.Fatalf("want an ssh host key error, got %v", err)
		}
		t.Log(err)
	})
	t.Run("stopped daemon is unreachable", func(t *testing.T) {
		d.Stop(t)
		_, err := connect.Connect(ctx, connect.DockerHost{Name: "second", Host: d.Socket})
		var he *connect.HostError
		if !errors.As(err, &he) || he.Kind != connect.KindUnreachable {
			t.Fatalf("want unreachable, got %v", err)
		}
		if !strings.Contains(err.Error(), "second") {
			t.Fatalf("message does not name the host: %v", err)
		}
		t.Log(err)
	})
}
