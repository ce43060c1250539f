//go:build integration

package k8s

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// checking is the progress line of a case's check, as logs shows it.
var checking = regexp.MustCompile(`progress: case (\d)/9, checking`)

// A job of about three minutes, far past any request's timeout, is
// followed to its end by logs -f and by an attached submit: each gets the
// job's lines as the runner prints them (a progress line at each of its
// nine cases), minutes apart, and ends with the job, logs -f with its exit
// code and the submit with its table.
func TestFollowAThreeMinuteJob(t *testing.T) {
	d := submit(t, 5*time.Minute, "long", "--cpu", "-d", "-q")
	expect(t, d, 0)
	id := strings.TrimSpace(d.Stdout)

	// logs -f, each line timed as it arrives.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, x.Bin, "logs", "-f", id)
	cmd.Env = x.Env()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &xruntest.LockedBuffer{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := checking.FindStringSubmatch(sc.Text()); m != nil {
				mu.Lock()
				arrived[m[1]] = time.Now()
				mu.Unlock()
			}
		}
	}()

	// Meanwhile an attached submit of the same experiment, to its end.
	start := time.Now()
	r := submit(t, 8*time.Minute, "long", "--cpu")
	took := time.Since(start)
	expect(t, r, 0, "progress: case 9/9")
	if took < 2*time.Minute {
		t.Errorf("the attached submit returned after %v, before its job of about three minutes could end", took)
	}
	if !strings.Contains(r.Stdout, "same") {
		t.Errorf("no results table on stdout:\n%s", r.Stdout)
	}

	<-read
	err = cmd.Wait()
	if err != nil {
		t.Fatalf("logs -f %s: %v\nstderr:\n%s", id, err, cmd.Stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	for c := 1; c <= 9; c++ {
		if _, ok := arrived[fmt.Sprint(c)]; !ok {
			t.Errorf("logs -f never showed the progress line of case %d/9 (it showed %d of them)", c, len(arrived))
		}
	}
	first, last := arrived["1"], arrived["9"]
	if !first.IsZero() && !last.IsZero() && last.Sub(first) < 2*time.Minute {
		t.Errorf("logs -f showed the first and the last case %v apart, not as the job printed them (over 2 minutes apart)", last.Sub(first))
	}
	if s := x.Status(t, id); s.Status != "succeeded" {
		t.Errorf("status %+v", s)
	}
	expect(t, x.Run(t, time.Minute, "rm", id), 0)
}

// A job of the cluster reruns there: in its namespace, its image built
// here and pushed to the registry its record kept (the rerun's shell sets
// none), with its mode.
func TestRerun(t *testing.T) {
	r := submit(t, 5*time.Minute, "quick", "--cpu", "-d", "-q")
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	expect(t, x.Run(t, 5*time.Minute, "wait", id), 0)
	rr := x.RunEnv(t, 5*time.Minute, []string{"XRUN_K8S_REGISTRY="}, "rerun", "--json", id)
	expect(t, rr, 0)
	again := xruntest.JobID(t, rr)
	s := x.Status(t, again)
	if again == id || s.Status != "succeeded" || !strings.HasPrefix(s.Host, "k8s://") {
		t.Errorf("the rerun of %s: %s %+v", id, again, s)
	}
	for _, j := range []string{id, again} {
		expect(t, x.Run(t, time.Minute, "rm", j), 0)
	}
}

// A pod deleted by hand (kubectl delete pod) while an attached submit
// follows it: its runner writes its partial results into its log as it
// stops, and the submit keeps them, whether the pod and its log are still
// there when it collects them or already gone.
func TestDeletedPodKeepsPartialResults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	deleted := make(chan error, 1)
	go func() {
		// This submit's pod of the slow experiment, once its runner has
		// run a while.
		since := time.Now().Add(-time.Second)
		for ctx.Err() == nil {
			pods, err := kc.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: contract.LabelExperiment + "=e2e-slow"})
			for _, p := range pods.Items {
				if err == nil && p.Status.Phase == corev1.PodRunning && p.CreationTimestamp.After(since) {
					time.Sleep(10 * time.Second)
					deleted <- kc.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{})
					return
				}
			}
			time.Sleep(time.Second)
		}
		deleted <- ctx.Err()
	}()
	r := submit(t, 5*time.Minute, "slow", "--cpu", "--json")
	if err := <-deleted; err != nil {
		t.Fatalf("delete the pod: %v", err)
	}
	expect(t, r, contract.ExitCancelled, "kubectl delete of its pod or Job")
	id := xruntest.JobID(t, r)
	s := x.Status(t, id)
	if s.Status != result.StatusCancelled {
		t.Errorf("status %+v, want cancelled", s)
	}
	if _, err := os.Stat(filepath.Join(s.StoreDir, result.FileName)); err != nil {
		logs := x.Run(t, time.Minute, "logs", id)
		t.Fatalf("no partial results kept (%v); the submit said:\n%s\nits log:\n%s%s", err, r.Stderr, logs.Stdout, logs.Stderr)
	}
	if res := x.Results(t, id); res == nil || res.Status != result.StatusCancelled {
		t.Errorf("the partial results: %+v", res)
	}
	// The log, from the pod while the Job controller still holds it, or
	// as the submit followed it once the pod is gone (which comes first
	// is the cluster's timing; kube's TestCollectFollowedLogOfADeletedPod
	// covers the second).
	logs := x.Run(t, time.Minute, "logs", id)
	if !strings.Contains(logs.Stdout, "status: cancelled") {
		t.Errorf("logs of the deleted pod's job:\n%s", logs.Stdout)
	}
	from := "the pod's log on the cluster"
	if strings.Contains(logs.Stdout, "was deleted while it ran, and its log with it") {
		from = "the log as the submit followed it"
	}
	t.Logf("the partial results came from %s", from)
	expect(t, x.Run(t, time.Minute, "rm", id), 0)
}

// A detached job whose pod is deleted by hand, and gone before any xrun
// looks: it ends cancelled, and says that its log and partial results
// went with the pod, not that it never started.
func TestDeletedPodOfADetachedJob(t *testing.T) {
	r := submit(t, 5*time.Minute, "slow", "--cpu", "-d", "-q")
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	until(t, 3*time.Minute, "job running", func() bool { return x.Status(t, id).Status == "running" })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: contract.LabelJob + "=" + id}
	pods, err := kc.CoreV1().Pods("default").List(ctx, sel)
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the job's pods: %v, %v", pods, err)
	}
	time.Sleep(5 * time.Second) // the runner is timing
	if err := kc.CoreV1().Pods("default").Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, 2*time.Minute, "the pod gone", func() bool {
		pods, err := kc.CoreV1().Pods("default").List(ctx, sel)
		return err == nil && len(pods.Items) == 0
	})
	w := x.Run(t, 2*time.Minute, "wait", id)
	expect(t, w, contract.ExitCancelled)
	s := x.Status(t, id)
	if s.Status != result.StatusCancelled || !strings.Contains(s.Error, "kubectl delete") ||
		!strings.Contains(s.Error, "no partial results were kept: its pod was deleted, and its log with it") {
		t.Errorf("status of the job whose pod was deleted: %+v", s)
	}
	t.Logf("xrun wait: %s", strings.TrimSpace(w.Stderr))
	expect(t, x.Run(t, time.Minute, "rm", id), 0)
}
