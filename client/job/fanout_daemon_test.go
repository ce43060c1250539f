//go:build integration

package job

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/internal/testenv"
	"github.com/xrun-dev/xrun/report"
	"github.com/xrun-dev/xrun/result"
)

// runJob runs a job container on target that prints a results document
// (as the runner writes it) naming the host's daemon, and decodes it.
func runJob(ctx context.Context, target connect.DockerHost, w io.Writer) (*result.Results, error) {
	cli, err := connect.Connect(ctx, target)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	info, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "connected to %s (Docker %s)\n", info.Info.Name, info.Info.ServerVersion)
	jobID := fmt.Sprintf("fan%d", time.Now().UnixNano()%1e9)
	r := result.Results{
		SchemaVersion: 1, JobID: jobID, Experiment: "fanout-fixture", Status: result.StatusSucceeded,
		Mode: "cpu", Baseline: "baseline", Implementations: []string{"baseline", "fast"},
		Env: result.Env{Host: target.Name, CPU: "daemon with root " + info.Info.DockerRootDir},
		Cases: []result.Case{{Label: "T=64", Params: map[string]any{"T": 64}, Results: map[string]*result.ImplResult{
			"baseline": {Status: result.ImplOK, Timing: &result.Timing{MedianMS: 2}},
			"fast":     {Status: result.ImplOK, Timing: &result.Timing{MedianMS: 1}},
		}}},
	}
	doc, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image:  testenv.BusyboxImage,
			Env:    []string{"RESULTS=" + string(doc)},
			Cmd:    []string{"sh", "-c", `printf '%s' "$RESULTS"`},
			Labels: map[string]string{"dev.xrun.job": jobID, "dev.xrun.test": "fanout"},
		},
	})
	if err != nil {
		return nil, err
	}
	defer cli.ContainerRemove(context.WithoutCancel(ctx), created.ID, client.ContainerRemoveOptions{Force: true})
	wait := cli.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "job %s running\n", jobID)
	select {
	case res := <-wait.Result:
		if res.StatusCode != 0 {
			return nil, fmt.Errorf("job exited %d", res.StatusCode)
		}
	case err := <-wait.Error:
		return nil, err
	}
	logs, err := cli.ContainerLogs(ctx, created.ID, client.ContainerLogsOptions{ShowStdout: true})
	if err != nil {
		return nil, err
	}
	defer logs.Close()
	var data bytes.Buffer
	if _, err := stdcopy.StdCopy(&data, io.Discard, logs); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "job %s finished\n", jobID)
	return result.Decode(data.Bytes())
}

// TestFanOutLocalAndTLS submits to the local daemon and to a second
// daemon over tcp+TLS at once, compares the two results, then stops the
// second daemon: the local job still completes and the failure is
// reported for the stopped host.
func TestFanOutLocalAndTLS(t *testing.T) {
	testenv.RequireDocker(t)
	d := testenv.StartDaemon(t)
	testenv.EnsureBusybox(t, testenv.LocalHost)
	testenv.EnsureBusybox(t, d.Socket)
	targets := map[string]connect.DockerHost{
		"local":  {Name: "local", Host: testenv.LocalHost},
		"second": {Name: "second", Host: d.TCP, TLS: &connect.TLS{CAFile: d.CertDir + "/ca.pem", CertFile: d.CertDir + "/cert.pem", KeyFile: d.CertDir + "/key.pem", Verify: true}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	work := func(ctx context.Context, h string, w io.Writer) (*result.Results, error) {
		return runJob(ctx, targets[h], w)
	}

	var out syncBuffer
	res := FanOut(ctx, []string{"local", "second"}, &out, work)
	if err := HostErrors(res); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"local  | connected to", "second | connected to", "second | job fan", "local  | job fan"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("progress lacks %q:\n%s", want, out.String())
		}
	}
	if res[0].Value.Env.CPU == res[1].Value.Env.CPU {
		t.Fatalf("both results came from the same daemon: %q", res[0].Value.Env.CPU)
	}
	rep, err := report.Compare([]report.CompareInput{
		{JobID: res[0].Value.JobID, Host: "local", Results: res[0].Value},
		{JobID: res[1].Value.JobID, Host: "second", Results: res[1].Value},
	})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := rep.Text(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "fast      1.00   2.00x") {
		t.Fatalf("comparison:\n%s", table.String())
	}
	t.Logf("progress:\n%s\ncomparison:\n%s", out.String(), table.String())

	d.Stop(t)
	out = syncBuffer{}
	res = FanOut(ctx, []string{"local", "second"}, &out, work)
	if res[0].Err != nil || res[0].Value == nil {
		t.Fatalf("the local host did not complete: %v\n%s", res[0].Err, out.String())
	}
	var he *connect.HostError
	if !errors.As(res[1].Err, &he) || he.Kind != connect.KindUnreachable {
		t.Fatalf("the stopped host's failure: %v", res[1].Err)
	}
	if !strings.Contains(out.String(), "second | failed: cannot reach the Docker daemon at second (tcp://127.0.0.1:") {
		t.Fatalf("the failure is not reported for its host:\n%s", out.String())
	}
	if FailedHosts(res) != 1 {
		t.Fatalf("%d failures", FailedHosts(res))
	}
	t.Logf("with the second daemon stopped:\n%s", out.String())
}
