package kube

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/buildctx"
	"github.com/xrun-dev/xrun/contract"
)

func TestJobName(t *testing.T) {
	for _, name := range []string{
		"xrun-e2e-quick-0123456789ab",
		"xrun-My_Kernel.v2-0123456789ab",
		"xrun-" + strings.Repeat("very-long-experiment-name-", 4) + "0123456789ab",
	} {
		got := JobName(name)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 || len(got) > 52 {
			t.Errorf("JobName(%q) = %q: %v", name, got, errs)
		}
		if !strings.HasSuffix(got, "0123456789ab") {
			t.Errorf("JobName(%q) = %q lost the job id", name, got)
		}
	}
}

func testSpec() backend.Spec {
	return backend.Spec{
		Name: "xrun-quick-0123456789ab", Image: "xrun/quick:abcdef012345",
		Code: &buildctx.Context{Hash: "c0dec0dec0dec0de"},
		Env:  []string{"A=1"},
		// The builder's name, which the pod must not take for its node's.
		HostName: "builder",
		Labels: map[string]string{
			contract.LabelJob: "0123456789ab", contract.LabelExperiment: "quick",
			contract.LabelImage: "xrun/quick:abcdef012345", contract.LabelTimeout: "5m0s",
		},
		GPUs: &backend.GPUs{Count: 2}, ShmBytes: 1 << 30, MemoryBytes: 8 << 30, CPUs: 4, Timeout: 5 * time.Minute,
		Push: &backend.Push{Builder: pushedBuilder{}, Registry: "registry.lab:5000"},
	}
}

func TestJobObject(t *testing.T) {
	s := testSpec()
	ref := CodeImage("registry.lab:5000/", s)
	if ref != "registry.lab:5000/xrun/quick:abcdef012345-c0dec0dec0de" {
		t.Errorf("CodeImage = %q", ref)
	}
	job := JobObject(s, ref, "0123456789ab", "regcred", nil)
	if !*job.Spec.Suspend || *job.Spec.BackoffLimit != 0 {
		t.Error("the Job must be created suspended and never retried")
	}
	rules := job.Spec.PodFailurePolicy.Rules
	if len(rules) != 1 || rules[0].Action != batchv1.PodFailurePolicyActionIgnore || rules[0].OnPodConditions[0].Type != corev1.DisruptionTarget {
		t.Errorf("pod failure policy: %+v", rules)
	}
	for k, v := range job.Labels {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("label %s=%q: %v", k, v, errs)
		}
	}
	if job.Annotations[contract.LabelImage] != ref || job.Annotations[contract.LabelTimeout] != "5m0s" {
		t.Errorf("annotations: %v", job.Annotations)
	}
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image != ref || c.Resources.Limits.Name(GPUResource, "0").Value() != 2 || c.Resources.Limits.Memory().Value() != 8<<30 ||
		c.Resources.Limits.Cpu().Value() != 4 || c.Resources.Requests.Cpu().Value() != 4 {
		t.Errorf("container: %s %v %v", c.Image, c.Resources.Limits, c.Resources.Requests)
	}
	env := map[string]string{}
	hostNames := 0
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.Name == contract.EnvHostName {
			hostNames++
			// The node's name, not the builder's.
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
				t.Errorf("%s: %+v", contract.EnvHostName, e)
			}
		}
	}
	if env[contract.EnvOutToLog] != "1" || env[contract.EnvImageRef] != ref || env["A"] != "1" || hostNames != 1 {
		t.Errorf("env: %v (%d %s)", env, hostNames, contract.EnvHostName)
	}
	if *pod.SecurityContext.RunAsUser != 0 || *pod.SecurityContext.RunAsNonRoot || *c.SecurityContext.AllowPrivilegeEscalation ||
		c.SecurityContext.Capabilities.Drop[0] != "ALL" || !slices.Equal(capNames(c.SecurityContext.Capabilities.Add), contract.RunnerCaps) {
		t.Error("the runner must start as root with the runner's capabilities alone (it runs the experiment as the job user)")
	}
	if *pod.ActiveDeadlineSeconds != int64((5*time.Minute + DeadlineSlack).Seconds()) {
		t.Errorf("deadline %d", *pod.ActiveDeadlineSeconds)
	}
	if pod.ImagePullSecrets[0].Name != "regcred" || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("pod: %+v", pod)
	}
	s.Root = true
	if root := JobObject(s, ref, "0123456789ab", "", nil).Spec.Template.Spec; root.SecurityContext.RunAsUser != nil || root.Containers[0].SecurityContext != nil {
		t.Error("--root must leave the user and capabilities to the image")
	}
	s.CapAdd = []string{"SYS_ADMIN"}
	if c := JobObject(s, ref, "0123456789ab", "", nil).Spec.Template.Spec.Containers[0]; c.SecurityContext == nil ||
		len(c.SecurityContext.Capabilities.Add) != 1 || c.SecurityContext.Capabilities.Add[0] != "SYS_ADMIN" {
		t.Errorf("root with CapAdd: security context %+v", c.SecurityContext)
	}
	s.Root = false
	if c := JobObject(s, ref, "0123456789ab", "", nil).Spec.Template.Spec.Containers[0]; !slices.Equal(capNames(c.SecurityContext.Capabilities.Add), contract.RunnerCaps) {
		t.Error("an unprivileged job's runner must get the runner's capabilities alone")
	}
}

func capNames(cs []corev1.Capability) []string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c))
	}
	return out
}

func TestCapabilitiesRefuseSpec(t *testing.T) {
	s := testSpec()
	s.GPUs = &backend.GPUs{IDs: []string{"0"}}
	if Capabilities.Refuse(s.Asks()...) == nil {
		t.Error("device ids accepted")
	}
	s.GPUs, s.NoNetwork = nil, true
	if Capabilities.Refuse(s.Asks()...) == nil {
		t.Error("--network none accepted")
	}
	s.GPUs, s.NoNetwork = &backend.GPUs{Count: 2}, false
	if err := Capabilities.Refuse(s.Asks()...); err != nil {
		t.Errorf("two GPUs by count refused: %v", err)
	}
}

func pod(name string, created time.Time, phase corev1.PodPhase, cs *corev1.ContainerStatus, conds ...corev1.PodCondition) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
	p.Status.Phase, p.Status.Conditions = phase, conds
	if cs != nil {
		cs.Name = ContainerName
		p.Status.ContainerStatuses = []corev1.ContainerStatus{*cs}
	}
	return p
}

func TestStateOf(t *testing.T) {
	now := time.Now()
	if d := JobObject(testSpec(), "r/x:1", "0123456789ab", "", nil).Spec.ActiveDeadlineSeconds; d == nil || *d != int64((DefaultPendingLimit+5*time.Minute+DeadlineSlack).Seconds()) {
		t.Errorf("the Job's own deadline without a pending limit given: %v", d)
	}
	spec := testSpec()
	spec.PendingLimit = 10 * time.Minute
	job := JobObject(spec, "r/x:1", "0123456789ab", "", nil)
	if s := StateOf(job, nil); s.Phase != backend.Pending || s.Detail != "created" {
		t.Errorf("suspended: %+v", s)
	}
	no := false
	job.Spec.Suspend = &no
	unsched := pod("p1", now, corev1.PodPending, nil, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."})
	if s := StateOf(job, []corev1.Pod{unsched}); s.Phase != backend.Pending || !s.Waiting || s.Detail != "unschedulable" || !strings.Contains(s.Message, "Insufficient nvidia.com/gpu") {
		t.Errorf("unschedulable: %+v", s)
	}
	if d := job.Spec.ActiveDeadlineSeconds; d == nil || *d != int64((10*time.Minute+5*time.Minute+DeadlineSlack).Seconds()) {
		t.Errorf("the Job's own deadline, counted from the submit: %v", d)
	}
	// The Job's deadline passed while its pod waited for a node.
	expired := job.DeepCopy()
	expired.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonDeadlineExceeded, Message: "Job was active longer than specified deadline"}}
	unschedFailed := unsched.DeepCopy()
	unschedFailed.Status.Phase = corev1.PodFailed
	if s := StateOf(expired, []corev1.Pod{*unschedFailed}); s.Phase != backend.Exited || !s.TimedOut || !s.NoNode || s.Message != "no node took it within its pending limit (--pending-limit 10m0s): 0/1 nodes are available: 1 Insufficient nvidia.com/gpu." {
		t.Errorf("deadline while unschedulable: %+v", s)
	}
	if s := StateOf(expired, nil); s.Phase != backend.Exited || !s.TimedOut || s.Message != "Kubernetes stopped it at its deadline, 20m0s after the submit (its pending limit, its timeout and 5m0s)" {
		t.Errorf("deadline, pods gone: %+v", s)
	}
	// A Job made before pending limits (no annotation) tells its story
	// as it did.
	old := expired.DeepCopy()
	delete(old.Annotations, annotationPendingLimit)
	tenMin := int64(600)
	old.Spec.ActiveDeadlineSeconds = &tenMin
	if s := StateOf(old, []corev1.Pod{*unschedFailed}); s.Message != "no node took it before its deadline, 10m0s after the submit (its timeout plus 5m0s): 0/1 nodes are available: 1 Insufficient nvidia.com/gpu." {
		t.Errorf("an older Job past its deadline: %+v", s)
	}
	// Its one pod was deleted by hand and is gone: the Job failed for it.
	podGone := job.DeepCopy()
	podGone.Status.Failed = 1
	podGone.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit"}}
	if s := StateOf(podGone, nil); s.Phase != backend.Exited || s.ExitCode != contract.ExitCancelled || s.Message != "its pod was deleted, and the Job made no other" {
		t.Errorf("pod deleted: %+v", s)
	}
	if s := StateOf(podGone, []corev1.Pod{*unschedFailed}); s.ExitCode == contract.ExitCancelled {
		t.Errorf("a failed pod still listed read as deleted: %+v", s)
	}
	pulling := pod("p1", now, corev1.PodPending, &corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "not found"}}})
	if s := StateOf(job, []corev1.Pod{pulling}); s.Phase != backend.Pending || s.Detail != "ImagePullBackOff" {
		t.Errorf("pulling: %+v", s)
	}
	oom := pod("p1", now, corev1.PodFailed, &corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ContainerID: "containerd://a1", ExitCode: 137, Reason: "OOMKilled"}}})
	if s := StateOf(job, []corev1.Pod{oom}); s.Phase != backend.Exited || !s.OOMKilled || s.ExitCode != 137 || s.MemoryBytes != 8<<30 {
		t.Errorf("oom: %+v", s)
	}
	// The kubelet's generic "Error" says less than the runner's exit code.
	cancelled := pod("p1", now, corev1.PodFailed, &corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ContainerID: "containerd://a4", ExitCode: 130, Reason: "Error"}}})
	if s := StateOf(job, []corev1.Pod{cancelled}); s.Phase != backend.Exited || s.ExitCode != 130 || s.Message != "the runner exited with code 130" {
		t.Errorf("a runner that exited 130: %+v", s)
	}
	// An evicted pod and its replacement: the newest decides, and until
	// the replacement runs, the job is being replaced, not failed.
	evicted := pod("p1", now, corev1.PodFailed, &corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ContainerID: "containerd://a2", ExitCode: 137}}},
		corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
	if s := StateOf(job, []corev1.Pod{evicted}); s.Phase != backend.Pending || s.Detail != "replacing" {
		t.Errorf("evicted: %+v", s)
	}
	running := pod("p2", now.Add(time.Second), corev1.PodRunning, &corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}})
	if s := StateOf(job, []corev1.Pod{running, evicted}); s.Phase != backend.Running {
		t.Errorf("replacement running: %+v", s)
	}
	deadline := pod("p1", now, corev1.PodFailed, &corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ContainerID: "containerd://a3", ExitCode: 130}}})
	deadline.Status.Reason = "DeadlineExceeded"
	if s := StateOf(job, []corev1.Pod{deadline}); s.Phase != backend.Exited || !s.TimedOut || s.ExitCode != 130 {
		t.Errorf("deadline: %+v", s)
	}
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "PodFailurePolicy", Message: "quota exceeded"}}
	if s := StateOf(job, nil); s.Phase != backend.Exited || s.ExitCode != contract.ExitInfra || s.Message != "quota exceeded" {
		t.Errorf("failed without a pod: %+v", s)
	}
}
