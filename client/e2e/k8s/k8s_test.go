//go:build integration

// Package k8s drives the real xrun binary against a real single-node
// Kubernetes cluster that the suite starts on this machine
// (scripts/k8s-cluster: etcd, kube-apiserver, controller manager,
// scheduler, kubelet with containerd, and a registry on localhost:5000),
// with job images built on this machine's Docker daemon and pushed there.
// XRUN_K8S_STATE=DIR uses a cluster already started with up.sh DIR and
// leaves it running. Without Docker, root or the cluster the suite is
// skipped, except under CI=true where that is a failure.
package k8s

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/xrun-dev/xrun/client/backend/kube"
	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/testenv"
	"github.com/xrun-dev/xrun/result"
)

// Base is the CPU base the jobs build on (images/make-cpu-base.sh).
const Base = "xrun/cpu-base:bookworm"

var (
	dataDir    string
	repo       string
	kubeconfig string
	registry   string
	kc         kubernetes.Interface
	eng        engine.Engine
)

func TestMain(m *testing.M) { os.Exit(mainK8s(m)) }

func mainK8s(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "k8s: -short: skipping the Kubernetes suite")
		return 0
	}
	fail := func(format string, args ...any) int { return testenv.Unavailable("k8s", format, args...) }
	repo = xruntest.Repo()
	var err error
	if eng, err = xruntest.Connect(); err != nil {
		return fail("%v", err)
	}
	defer eng.Close()
	if os.Geteuid() != 0 {
		return fail("the test cluster's kubelet and containerd need root")
	}
	if code := xruntest.EnsureBase(eng, repo, Base, "k8s"); code >= 0 {
		return code
	}

	state := os.Getenv("XRUN_K8S_STATE")
	if state == "" {
		tmp, err := os.MkdirTemp("", "xrun-k8s-")
		if err != nil {
			return fail("%v", err)
		}
		defer os.RemoveAll(tmp)
		state = filepath.Join(tmp, "cluster")
		if err := script("build.sh"); err != nil {
			return fail("build the cluster's binaries: %v", err)
		}
		if err := script("up.sh", state); err != nil {
			script("down.sh", state)
			return fail("start the cluster: %v", err)
		}
		defer script("down.sh", state)
	}
	env, err := readEnv(filepath.Join(state, "env"))
	if err != nil {
		return fail("%v", err)
	}
	kubeconfig, registry = env["KUBECONFIG"], env["XRUN_K8S_REGISTRY"]
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fail("%v", err)
	}
	if kc, err = kubernetes.NewForConfig(cfg); err != nil {
		return fail("%v", err)
	}

	tmp, err := os.MkdirTemp("", "xrun-k8s-e2e-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	x.Bin, dataDir = filepath.Join(tmp, "xrun"), filepath.Join(tmp, "data")
	if err := xruntest.Build(repo, x.Bin); err != nil {
		fmt.Fprintf(os.Stderr, "k8s: %v", err)
		return 1
	}
	defer cleanup()
	// The node is this machine: its compile caches (kube.CacheHostDir)
	// go with the suite.
	recordCaches()
	defer cleanupCaches()
	return m.Run()
}

// script runs scripts/k8s-cluster/NAME with its output on stderr.
func script(name string, args ...string) error {
	cmd := exec.Command("bash", append([]string{filepath.Join(repo, "scripts", "k8s-cluster", name)}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// readEnv reads the KEY=VALUE lines that up.sh writes.
func readEnv(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") {
			env[k] = strings.Trim(v, `"'`)
		}
	}
	if env["KUBECONFIG"] == "" || env["XRUN_K8S_REGISTRY"] == "" {
		return nil, fmt.Errorf("%s names no KUBECONFIG or XRUN_K8S_REGISTRY", path)
	}
	return env, nil
}

// cleanup deletes the suite's Jobs and the code images it built here.
func cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	kc.BatchV1().Jobs("default").DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{LabelSelector: contract.LabelJob})
	ims, _ := eng.Images(ctx, map[string]string{"dev.xrun.test": "k8s"})
	for _, im := range ims {
		for _, tag := range im.Tags {
			eng.RemoveImage(ctx, tag)
		}
	}
}

type res = xruntest.Result

var expect = xruntest.Expect

// x is the binary under test, with the store dataDir and the cluster's
// kubeconfig and registry.
var x = &xruntest.Xrun{Env: func() []string {
	return append(os.Environ(), "XDG_DATA_HOME="+dataDir, "KUBECONFIG="+kubeconfig,
		"XRUN_K8S_REGISTRY="+registry, "XRUN_HOST=", "XRUN_CONTEXT=", "XRUN_K8S=")
}}

// fixtureDir is the directory of fixture: in client/e2e/testdata, or
// here, or fixture itself when it is absolute.
func fixtureDir(fixture string) string {
	if filepath.IsAbs(fixture) {
		return fixture
	}
	dir := filepath.Join(repo, "client", "e2e", "testdata", fixture)
	if _, err := os.Stat(dir); err != nil {
		dir = filepath.Join(repo, "client", "e2e", "k8s", "testdata", fixture)
	}
	return dir
}

// submit submits fixture (fixtureDir) to the cluster as a CPU job on the
// CPU base.
func submit(t *testing.T, limit time.Duration, fixture string, flags ...string) res {
	t.Helper()
	args := append([]string{"submit", "--k8s", "--base", Base, "--label", "dev.xrun.test=k8s"}, flags...)
	return x.Run(t, limit, append(args, fixtureDir(fixture))...)
}

// until polls cond every second until it holds or limit passes.
func until(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(time.Second)
	}
}

func jobGone(t *testing.T, name string) bool {
	_, err := kc.BatchV1().Jobs("default").Get(context.Background(), name, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// An attached submit builds the image, pushes it with the code on top,
// runs the Job to the end, prints the table and fetches results.json
// through the log; logs, ps, results and rm then work on the job.
func TestAttachedRun(t *testing.T) {
	// --keep: an attached run deletes its Job once the results are in the
	// store, and this test looks at it from another store afterwards.
	// Without --json, as a person sees it: the id comes from ps --json.
	r, id := x.Submitted(t, fixtureDir("quick"), func() res { return submit(t, 10*time.Minute, "quick", "--cpu", "--keep") })
	expect(t, r, 0, "pushing "+registry+"/xrun/e2e-quick:")
	if !strings.Contains(r.Stdout, "loop") {
		t.Errorf("no results table on stdout:\n%s", r.Stdout)
	}
	s := x.Status(t, id)
	if s.Status != result.StatusSucceeded || !strings.HasPrefix(s.Host, "k8s://") || s.ContainerName == "" {
		t.Fatalf("status %+v", s)
	}
	name := s.ContainerName
	// Said to run once its pod started (or to have run, where it ended
	// between two looks), never while it waited for a node.
	if !regexp.MustCompile(`job ` + id + ` (running|ran) in Job ` + regexp.QuoteMeta(name) + ` on k8s://`).MatchString(r.Stderr) {
		t.Errorf("no line that says where the job ran:\n%s", r.Stderr)
	}
	var res result.Results
	data, err := os.ReadFile(filepath.Join(s.StoreDir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &res); err != nil || res.Status != result.StatusSucceeded || res.Env.Container == nil {
		t.Fatalf("results.json: %v %+v", err, res.Status)
	}
	// env.host is the node the pod ran on, not the pod.
	if nodes, err := kc.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); err != nil || len(nodes.Items) != 1 || res.Env.Host != nodes.Items[0].Name {
		t.Errorf("env.host %q, want the node's name (%v)", res.Env.Host, err)
	}
	for _, f := range []string{"out/results.md", "out/runner.log"} {
		if _, err := os.Stat(filepath.Join(s.StoreDir, f)); err != nil {
			t.Errorf("store: %v", err)
		}
	}
	// The pod's log, read once for both: the store keeps it without the frame.
	stored, err := os.ReadFile(filepath.Join(s.StoreDir, "logs.txt"))
	if err != nil || bytes.Contains(stored, []byte(contract.OutPrefix)) || !bytes.Contains(stored, []byte("status: succeeded")) {
		t.Errorf("store's logs.txt (%v), frame lines must not be in it:\n%s", err, stored)
	}
	logs := x.Run(t, time.Minute, "logs", id)
	expect(t, logs, 0)
	if strings.Contains(logs.Stdout, contract.OutPrefix) || !strings.Contains(logs.Stdout, "status: succeeded") {
		t.Errorf("logs (frame lines must not show):\n%s", logs.Stdout)
	}
	ps := x.Run(t, time.Minute, "ps", "--all", "--k8s")
	expect(t, ps, 0)
	if !strings.Contains(ps.Stdout, id) {
		t.Errorf("ps --all --k8s lacks %s:\n%s", id, ps.Stdout)
	}
	expect(t, x.Run(t, time.Minute, "results", id), 0)
	// Another store finds the job on the cluster by its id and follows it.
	saved := dataDir
	dataDir = t.TempDir()
	other := x.Run(t, time.Minute, "status", "--k8s", id[:8])
	otherResults := x.Run(t, time.Minute, "results", "--json", id)
	dataDir = saved
	expect(t, other, 0)
	expect(t, otherResults, 0)
	if !strings.Contains(other.Stdout, "succeeded") || !strings.Contains(otherResults.Stdout, `"experiment": "e2e-quick"`) {
		t.Errorf("the job from another store:\nstatus:\n%s\nresults:\n%s", other.Stdout, otherResults.Stdout)
	}
	expect(t, x.Run(t, time.Minute, "rm", id), 0)
	until(t, time.Minute, "Job deleted", func() bool { return jobGone(t, name) })
}

// Cancelling a running job stops its runner with SIGTERM through the
// pod's deadline: the runner writes cancelled results, which come back.
func TestDetachedCancel(t *testing.T) {
	r := submit(t, 5*time.Minute, "slow", "--cpu", "-d", "-q")
	expect(t, r, 0)
	// -q: the job id alone, and no build or push lines on stderr.
	if strings.TrimSpace(r.Stderr) != "" {
		t.Errorf("submit -q printed on stderr:\n%s", r.Stderr)
	}
	id := strings.TrimSpace(r.Stdout)
	until(t, 3*time.Minute, "job running", func() bool { return x.Status(t, id).Status == "running" })
	time.Sleep(3 * time.Second) // the runner is making the inputs
	expect(t, x.Run(t, 2*time.Minute, "cancel", id), 0, "cancelled job "+id)
	s := x.Status(t, id)
	if s.Status != result.StatusCancelled {
		t.Fatalf("status after cancel: %+v", s)
	}
	data, err := os.ReadFile(filepath.Join(s.StoreDir, "results.json"))
	if err != nil {
		t.Fatalf("a cancelled job's partial results: %v", err)
	}
	var res result.Results
	if err := json.Unmarshal(data, &res); err != nil || res.Status != result.StatusCancelled {
		t.Errorf("results.json status %q: %v", res.Status, err)
	}
	w := x.Run(t, time.Minute, "wait", id)
	expect(t, w, contract.ExitCancelled)
	expect(t, x.Run(t, time.Minute, "rm", id), 0)
}

// A job past its timeout is stopped and recorded as timed out (124).
func TestTimeout(t *testing.T) {
	r := submit(t, 5*time.Minute, "slow", "--cpu", "--timeout", "20s", "--json")
	expect(t, r, 124, "ran past its timeout of 20s")
	id := xruntest.JobID(t, r)
	if s := x.Status(t, id); s.Status != result.StatusTimeout {
		t.Errorf("status %+v", s)
	}
	expect(t, x.Run(t, time.Minute, "rm", id), 0)
}

// A GPU job on a cluster without GPUs waits, and says why; a gpu_type no
// node has is refused before anything is made.
func TestGPUScheduling(t *testing.T) {
	// The test cluster's node offers no GPU: refused before anything is
	// pushed or made.
	r := submit(t, 5*time.Minute, "quick", "--gpus", "1", "-d")
	expect(t, r, contract.ExitUsage, "the Kubernetes cluster cannot run this job: the job asks for 1 GPU and none of its 1 nodes offers any (nvidia.com/gpu)", "--queue", "nothing was submitted")
	// With --queue it waits for a node that has one, pending with the
	// scheduler's reason, under a deadline counted from the submit: its
	// pending limit, its timeout and the slack.
	r = submit(t, 5*time.Minute, "quick", "--gpus", "1", "--queue", "--timeout", "30s", "--pending-limit", "2m", "-d")
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	until(t, 2*time.Minute, "unschedulable", func() bool {
		s := x.Status(t, id)
		return s.Container != nil && strings.Contains(s.Container.Message, "nvidia.com/gpu")
	})
	if s := x.Status(t, id); s.Status != "pending" || s.Container.State != "unschedulable" {
		t.Errorf("status %+v %+v", s, s.Container)
	}
	if ps := x.Run(t, time.Minute, "ps"); !strings.Contains(ps.Stdout, "pending") {
		t.Errorf("ps:\n%s", ps.Stdout)
	}
	jobs, err := kc.BatchV1().Jobs("default").List(context.Background(), metav1.ListOptions{LabelSelector: contract.LabelJob + "=" + id})
	if err != nil || len(jobs.Items) != 1 || jobs.Items[0].Spec.ActiveDeadlineSeconds == nil || *jobs.Items[0].Spec.ActiveDeadlineSeconds != int64((2*time.Minute+30*time.Second+kube.DeadlineSlack).Seconds()) {
		t.Errorf("the Job's own deadline (pending limit + timeout + slack from the submit): %v %+v", err, jobs)
	}
	if st := x.Run(t, time.Minute, "status", "--json", id); !strings.Contains(st.Stdout, `"pending_limit": 120000000000`) {
		t.Errorf("the record lacks the pending limit a rerun repeats:\n%s", st.Stdout)
	}
	expect(t, x.Run(t, 2*time.Minute, "cancel", id), 0)
	if s := x.Status(t, id); s.Status != result.StatusCancelled {
		t.Errorf("status after cancel: %+v", s)
	}
	expect(t, x.Run(t, time.Minute, "rm", id), 0)

	dir := withResource(t, "quick", "resources: {timeout: 5m}", "gpu_type: H100")
	r = submit(t, 5*time.Minute, dir, "--gpus", "1")
	expect(t, r, contract.ExitInfra, `gpu_type "H100": no node of the cluster has that GPU`)
	expect(t, x.Run(t, time.Minute, "submit", "--k8s", "--gpus", "device=0", dir), contract.ExitUsage, "does not apply with --k8s")
	// Memory or CPUs no node offers its pods are refused the same way,
	// naming the most a node has, and nothing is left.
	before := x.Jobs(t)
	r = submit(t, 5*time.Minute, withResource(t, "quick", "resources: {timeout: 5m}", "memory: 100g"), "--cpu")
	expect(t, r, contract.ExitUsage, "the Kubernetes cluster cannot run this job: the job asks for 100Gi of memory (resources.memory) and the most any of its 1 nodes offers its pods is", "--queue", "nothing was submitted")
	r = submit(t, 5*time.Minute, "quick", "--cpu", "--cpus", "64")
	expect(t, r, contract.ExitUsage, "the job asks for 64 CPUs (--cpus or resources.cpus) and the most any of its 1 nodes offers its pods is")
	if after := x.Jobs(t); len(after) != len(before) {
		t.Errorf("refused submits left records: %d, then %d", len(before), len(after))
	}
}

// An evicted pod is replaced by the Job controller and the job still
// ends with all its results.
func TestEvictedPodIsReplaced(t *testing.T) {
	r := submit(t, 5*time.Minute, "steady", "--cpu", "-d")
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	until(t, 3*time.Minute, "job running", func() bool { return x.Status(t, id).Status == "running" })
	ctx := context.Background()
	pods, err := kc.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: contract.LabelJob + "=" + id})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods: %v %d", err, len(pods.Items))
	}
	first := pods.Items[0].Name
	if err := kc.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: first, Namespace: "default"}}); err != nil {
		t.Fatalf("evict %s: %v", first, err)
	}
	w := x.Run(t, 5*time.Minute, "wait", id)
	expect(t, w, 0)
	// The eviction deleted the first pod; the Job controller made another.
	pods, _ = kc.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: contract.LabelJob + "=" + id})
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	if len(names) != 1 || names[0] == first {
		t.Errorf("the evicted pod %s was not replaced: pods %v", first, names)
	}
	// The log is the replacement's, which ran to the end.
	if logs := x.Run(t, time.Minute, "logs", id); !strings.Contains(logs.Stdout, "status: succeeded") {
		t.Errorf("logs of the replacement:\n%s", logs.Stdout)
	}
	// The last lines are the runner's, not its packed output's (which the
	// log ends with, and which is stripped).
	if tail := x.Run(t, time.Minute, "logs", "--tail", "2", id); tail.Code != 0 || strings.Count(tail.Stdout, "\n") != 2 || !strings.Contains(tail.Stdout, "status: succeeded") {
		t.Errorf("logs --tail 2 of a finished cluster job (exit %d):\n%q", tail.Code, tail.Stdout)
	}
	s := x.Status(t, id)
	if s.Status != result.StatusSucceeded {
		t.Errorf("status %+v", s)
	}
	if _, err := os.Stat(filepath.Join(s.StoreDir, "results.json")); err != nil {
		t.Errorf("results after eviction: %v", err)
	}
	expect(t, x.Run(t, time.Minute, "rm", id), 0)
}

// A GPU job whose gpu_type a node has lands on that node with the GPU
// limit: the node is made to advertise one GPU (capacity and the GPU
// feature discovery label) for the test, as NVIDIA's device plugin would.
func TestGPUTypeSchedulesOnMatchingNode(t *testing.T) {
	ctx := context.Background()
	nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("nodes: %v", err)
	}
	node := nodes.Items[0].Name
	patch := func(typ types.PatchType, sub string, body string) {
		t.Helper()
		var subs []string
		if sub != "" {
			subs = []string{sub}
		}
		if _, err := kc.CoreV1().Nodes().Patch(ctx, node, typ, []byte(body), metav1.PatchOptions{}, subs...); err != nil {
			t.Fatalf("patch node: %v", err)
		}
	}
	patch(types.JSONPatchType, "status", `[{"op":"add","path":"/status/capacity/nvidia.com~1gpu","value":"1"}]`)
	patch(types.MergePatchType, "", `{"metadata":{"labels":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3"}}}`)
	t.Cleanup(func() {
		// The kubelet made allocatable from the capacity: both go, or the
		// next GPU job schedules on a GPU the node does not have.
		for _, field := range []string{"capacity", "allocatable"} {
			kc.CoreV1().Nodes().Patch(ctx, node, types.JSONPatchType, []byte(`[{"op":"remove","path":"/status/`+field+`/nvidia.com~1gpu"}]`), metav1.PatchOptions{}, "status")
		}
		kc.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(`{"metadata":{"labels":{"nvidia.com/gpu.product":null}}}`), metav1.PatchOptions{})
		until(t, time.Minute, "the node without GPUs again", func() bool {
			n, err := kc.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false
			}
			_, c := n.Status.Capacity["nvidia.com/gpu"]
			_, a := n.Status.Allocatable["nvidia.com/gpu"]
			return !c && !a
		})
	})
	dir := withResource(t, "slow", "resources: {timeout: 10m}", "gpu_type: H100")
	r := submit(t, 5*time.Minute, dir, "--gpus", "1", "-d")
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	var scheduled bool
	until(t, 2*time.Minute, "pod scheduled", func() bool {
		pods, err := kc.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: contract.LabelJob + "=" + id})
		if err != nil || len(pods.Items) == 0 {
			return false
		}
		p := pods.Items[0]
		if p.Spec.NodeName == "" {
			return false
		}
		scheduled = p.Spec.NodeName == node
		aff := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
		if aff.Key != "nvidia.com/gpu.product" || len(aff.Values) != 1 || aff.Values[0] != "NVIDIA-H100-80GB-HBM3" {
			t.Errorf("affinity %+v", aff)
		}
		if q := p.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; q.Value() != 1 {
			t.Errorf("gpu limit %v", q.String())
		}
		return true
	})
	if !scheduled {
		t.Errorf("the job was not scheduled on %s", node)
	}
	// The cancel comes as the pod starts, before or after the kubelet made
	// the runner's container (whose runner finds no GPU): either way the
	// job's end is recorded.
	expect(t, x.Run(t, 2*time.Minute, "cancel", id), 0)
	if s := x.Status(t, id); s.Status == "unknown" || s.Status == "running" || strings.Contains(s.Error, "logs of pod") {
		t.Errorf("status after cancel: %+v", s)
	}
	expect(t, x.Run(t, time.Minute, "rm", "--force", id), 0)
}

// withGPUType copies fixture (client/e2e/testdata) to a temporary dir with
// gpu_type added to its resources line, which must read exactly resources.
func withResource(t *testing.T, fixture, resources, extra string) string {
	t.Helper()
	src := filepath.Join(repo, "client", "e2e", "testdata", fixture)
	dir := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "xrun.yaml" {
			with := strings.TrimSuffix(resources, "}") + ", " + extra + "}"
			if !bytes.Contains(data, []byte(resources)) {
				t.Fatalf("%s/xrun.yaml has no %q", fixture, resources)
			}
			data = bytes.Replace(data, []byte(resources), []byte(with), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// podGateway is the host's address on the test cluster's pod bridge
// (scripts/k8s-cluster/up.sh: the first address of its pod CIDR), where
// a pod reaches a server of this machine.
const podGateway = "10.244.0.1"

// A job submitted with the config's server: its runner posts its
// results there, read back from the server's API. The POST token is a
// Secret of the job's own, owned by its Job and there while it runs, in
// no part of the Job's or the pod's spec; it is gone once the job is
// removed.
func TestPostTokenSecret(t *testing.T) {
	ctx := context.Background()
	s := x.Serve(t, "0.0.0.0:0")
	port := s.Base[strings.LastIndex(s.Base, ":")+1:]
	s.SetURL(t, "http://"+podGateway+":"+port)
	r := x.RunEnv(t, 5*time.Minute, s.Env(), "submit", "--k8s", "--base", Base, "--label", "dev.xrun.test=k8s", "--cpu", "-d", "-q", fixtureDir("pause"))
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	until(t, 3*time.Minute, "job running", func() bool { return x.Status(t, id).Status == "running" })
	name := x.Status(t, id).ContainerName

	job, err := kc.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := kc.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: contract.LabelJob + "=" + id})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("the job's pods: %v (%d)", err, len(pods.Items))
	}
	for what, obj := range map[string]any{"Job": job, "pod": pods.Items[0]} {
		b, _ := json.Marshal(obj)
		if bytes.Contains(b, []byte(s.Post)) || bytes.Contains(b, []byte(contract.EnvPostToken)) {
			t.Errorf("the %s holds the post token: %s", what, b)
		}
		if want := "http://" + podGateway + ":" + port + "/api/v1/results"; !bytes.Contains(b, []byte(want)) {
			t.Errorf("the %s does not give the runner %s", what, want)
		}
	}
	sec, err := kc.CoreV1().Secrets("default").Get(ctx, kube.TokenSecretName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the token's Secret while the job runs: %v", err)
	}
	if string(sec.Data["post-token"]) != s.Post || len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != job.UID {
		t.Errorf("the token's Secret: %+v, want the token, owned by Job %s", sec.ObjectMeta, job.UID)
	}

	expect(t, x.Run(t, 3*time.Minute, "wait", id), 0)
	runs := s.RunsOf(t, id)
	if len(runs) != 1 || runs[0].Experiment != "e2e-pause" || runs[0].Source != "post:runners" {
		t.Fatalf("the server's runs of job %s: %+v, want one of e2e-pause posted by token runners", id, runs)
	}
	expect(t, x.Run(t, time.Minute, "rm", id), 0)
	until(t, 2*time.Minute, "the token's Secret deleted with its Job", func() bool {
		_, err := kc.CoreV1().Secrets("default").Get(ctx, kube.TokenSecretName(name), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
