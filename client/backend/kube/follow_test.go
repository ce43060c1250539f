package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
)

// A followed log lasts as long as the job runs. Its lines come slowly, and
// past the client's request timeout: the log goes on to its end, where the
// client's timeout would cut it off (net/http: request canceled
// (Client.Timeout ...)).
func TestFollowLogPastTheRequestTimeout(t *testing.T) {
	defer func(d time.Duration) { requestTimeout = d }(requestTimeout)
	requestTimeout = 300 * time.Millisecond

	job, p := jobAndPod(corev1.PodRunning, corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, ContainerID: "containerd://0f1e2d3c"},
	}, time.Now())
	p.Status.Phase = corev1.PodSucceeded
	job.APIVersion, job.Kind = "batch/v1", "Job"
	pods := corev1.PodList{Items: []corev1.Pod{p}}
	pods.APIVersion, pods.Kind = "v1", "PodList"

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch path := r.URL.Path; {
		case path == "/version":
			fmt.Fprint(w, `{"major":"1","minor":"33","gitVersion":"v1.33.0"}`)
		case path == "/apis/batch/v1/namespaces/lab/jobs/"+job.Name:
			json.NewEncoder(w).Encode(job)
		case path == "/api/v1/namespaces/lab/pods":
			json.NewEncoder(w).Encode(pods)
		case path == "/api/v1/namespaces/lab/pods/"+p.Name+"/log" && r.URL.Query().Get("follow") == "true":
			w.Header().Set("Content-Type", "text/plain")
			for i := 1; i <= 3; i++ {
				fmt.Fprintf(w, "step %d\n", i)
				w.(http.Flusher).Flush()
				if i < 3 {
					time.Sleep(2 * requestTimeout)
				}
			}
		default:
			http.Error(w, "not served by this test: "+r.URL.String(), http.StatusNotFound)
		}
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q}}]
users: [{name: test, user: {}}]
contexts: [{name: test, context: {cluster: test, user: test, namespace: lab}}]
current-context: test
`, srv.URL)), 0o600)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := Connect(ctx, Selection{Kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	b.Poll = 10 * time.Millisecond
	j := &store.Job{ID: "0123456789ab", ContainerName: job.Name}
	var out strings.Builder
	if err := b.Logs(ctx, j, backend.LogOptions{Follow: true}, &out, nil); err != nil {
		t.Errorf("Logs -f: %v", err)
	}
	if want := "step 1\nstep 2\nstep 3\n"; out.String() != want {
		t.Errorf("followed log %q, want %q", out.String(), want)
	}

	// A request that is not a followed log keeps the timeout: a cluster
	// that stops answering is an error, not a hang.
	start := time.Now()
	if _, err := b.Client.CoreV1().Pods("lab").GetLogs(p.Name, &corev1.PodLogOptions{Follow: true}).DoRaw(ctx); err == nil || time.Since(start) > 3*requestTimeout {
		t.Errorf("a slow request on the client with the timeout: %v after %s, want its timeout", err, time.Since(start))
	}
}
