//go:build integration

package k8s

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xrun-dev/xrun/client/backend/kube"
	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// hostCaches is what the node's cache directory held before the suite
// (the node is this machine): cleanupCaches removes what the suite's jobs
// added, and the directories it made.
var hostCaches struct {
	made []string // CacheHostDir and its parents that were not there
	had  map[string]bool
}

func recordCaches() {
	hostCaches.had = map[string]bool{}
	for d := kube.CacheHostDir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		hostCaches.made = append(hostCaches.made, d)
	}
	ents, _ := os.ReadDir(kube.CacheHostDir)
	for _, e := range ents {
		hostCaches.had[e.Name()] = true
	}
}

func cleanupCaches() {
	ents, _ := os.ReadDir(kube.CacheHostDir)
	for _, e := range ents {
		if !hostCaches.had[e.Name()] {
			os.RemoveAll(filepath.Join(kube.CacheHostDir, e.Name()))
		}
	}
	for _, d := range hostCaches.made {
		os.Remove(d) // deepest first; only when empty
	}
}

// cacheOf returns what the results of the attached submit r (with
// --json) say of the compile caches the job started with.
func cacheOf(t *testing.T, r res) *result.Cache {
	t.Helper()
	expect(t, r, 0)
	return xruntest.Cache(t, x.Results(t, xruntest.JobID(t, r)))
}

// The compile caches of an experiment outlive its cluster jobs in a
// directory of the node that the job user owns, which two jobs share at
// once and --no-cache-volume leaves out.
func TestNodeCompileCache(t *testing.T) {
	const prefix = "xrun-cache-e2e-cache-"
	old, _ := filepath.Glob(filepath.Join(kube.CacheHostDir, prefix+"*"))
	for _, d := range old {
		os.RemoveAll(d)
	}
	first := cacheOf(t, submit(t, 5*time.Minute, "cache", "--json", "--cpu"))
	if !strings.HasPrefix(first.Volume, kube.CacheHostDir+"/"+prefix) || first.Files != 0 {
		t.Fatalf("first job's cache: %+v, want a new directory of the node", first)
	}
	fi, err := os.Stat(first.Volume)
	if err != nil {
		t.Fatalf("the node's cache directory: %v", err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65532 || st.Gid != 65532 {
		t.Errorf("%s belongs to %d:%d, want the job user 65532:65532", first.Volume, st.Uid, st.Gid)
	}
	entry := filepath.Join(first.Volume, "triton", "vecadd.cubin")
	if _, err := os.Stat(entry); err != nil {
		t.Errorf("the first job's entry on the node: %v", err)
	}
	second := cacheOf(t, submit(t, 5*time.Minute, "cache", "--json", "--cpu"))
	if second.Volume != first.Volume || second.Files == 0 || second.Bytes < 4096 {
		t.Errorf("second job's cache: %+v, want the first's directory with its entry", second)
	}
	// Two jobs at once, on one directory.
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = submit(t, 5*time.Minute, "cache", "--cpu").Code
		}()
	}
	wg.Wait()
	if codes[0] != 0 || codes[1] != 0 {
		t.Errorf("two jobs sharing the cache exited %v", codes)
	}
	own := cacheOf(t, submit(t, 5*time.Minute, "cache", "--json", "--cpu", "--no-cache-volume"))
	if own.Volume != "" || own.Files != 0 {
		t.Errorf("--no-cache-volume: %+v, want the job's own empty caches", own)
	}
	if dirs, _ := filepath.Glob(filepath.Join(kube.CacheHostDir, prefix+"*")); len(dirs) != 1 {
		t.Errorf("the experiment's directories on the node: %v, want one", dirs)
	}
}

// A namespace whose Pod Security level refuses hostPath volumes runs the
// job without the node's cache, and the submit says so.
func TestNodeCompileCachePodSecurity(t *testing.T) {
	ctx := context.Background()
	const ns = "xrun-e2e-baseline"
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: map[string]string{kube.PodSecurityEnforceLabel: "baseline"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kc.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}) })
	// The Job controller makes pods under the namespace's default service
	// account, which the service account controller adds.
	until(t, time.Minute, "default service account", func() bool {
		_, err := kc.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	r := submit(t, 5*time.Minute, "cache", "--json", "--cpu", "--namespace", ns)
	expect(t, r, 0, "namespace "+ns+" enforces Pod Security baseline")
	if c := cacheOf(t, r); c.Volume != "" || c.Files != 0 {
		t.Errorf("cache under Pod Security baseline: %+v, want the job's own", c)
	}
}

// A job cancelled while its pod cannot create the runner's container (here
// the node's cache directory is a file, so the volume never mounts, and the
// kubelet, waiting for it, enforces no deadline) is deleted: it has no log
// to keep. Cancel, status, logs and rm say that it was cancelled before its
// runner started, and none fails on the log it cannot have.
func TestCancelBeforeTheRunnerStarts(t *testing.T) {
	ctx := context.Background()
	// A file an earlier run left where the directory goes would stop the
	// first job as it stops the second.
	left, _ := filepath.Glob(filepath.Join(kube.CacheHostDir, "xrun-cache-e2e-cache-*"))
	for _, f := range left {
		if fi, err := os.Lstat(f); err == nil && !fi.IsDir() {
			os.Remove(f)
		}
	}
	vol := cacheOf(t, submit(t, 5*time.Minute, "cache", "--json", "--cpu")).Volume
	if !strings.HasPrefix(vol, kube.CacheHostDir+"/") {
		t.Fatalf("the cache fixture's directory on the node: %q", vol)
	}
	if err := os.RemoveAll(vol); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(vol, []byte("a file where the job's cache directory goes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(vol) })

	r := submit(t, 5*time.Minute, "cache", "--cpu", "-d")
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	until(t, 2*time.Minute, "the pod's cache volume failing to mount", func() bool {
		pods, err := kc.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: contract.LabelJob + "=" + id})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.StartTime == nil {
			return false
		}
		ev, err := kc.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pods.Items[0].Name + ",reason=FailedMount"})
		return err == nil && len(ev.Items) > 0
	})
	start := time.Now()
	expect(t, x.Run(t, 2*time.Minute, "cancel", id), 0, "cancelled job "+id)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the cancel took %s: it waited for a deadline the kubelet does not enforce yet", d.Round(time.Second))
	}
	s := x.Status(t, id)
	if s.Status != result.StatusCancelled || s.Error != "cancelled before its runner started" {
		t.Errorf("status after cancel: %+v", s)
	}
	until(t, time.Minute, "Job deleted", func() bool { return jobGone(t, s.ContainerName) })
	logs := x.Run(t, time.Minute, "logs", id)
	if logs.Code == 0 || !strings.Contains(logs.Stderr, "has no saved log: cancelled before its runner started") {
		t.Errorf("logs of a job cancelled before its runner started: exit %d\n%s", logs.Code, logs.Stderr)
	}
	expect(t, x.Run(t, time.Minute, "rm", id), 0)

	// Its timeout, likewise: the attached submit deletes it and says so.
	r = submit(t, 5*time.Minute, "cache", "--cpu", "--timeout", "15s", "--json")
	expect(t, r, 124, "ran past its timeout of 15s before its runner started")
	id = xruntest.JobID(t, r)
	if s := x.Status(t, id); s.Status != result.StatusTimeout || s.Error != "ran past its timeout of 15s before its runner started" {
		t.Errorf("status after the timeout: %+v", s)
	}
	expect(t, x.Run(t, time.Minute, "rm", id), 0)
}
