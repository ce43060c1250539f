package kube

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

const testCache = "xrun-cache-quick-0123456789ab"

// cacheSpec is testSpec with a compile cache, as a submit makes it.
func cacheSpec() backend.Spec {
	s := testSpec()
	s.CacheVolume = testCache
	s.CacheLabels = map[string]string{contract.LabelCache: "1"}
	return s
}

func envOf(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// A job's compile cache is the node's directory of the same name as a
// Docker host's volume, mounted at contract.CacheDir and given to the job
// user by an init container that may chown and nothing else.
func TestJobObjectCache(t *testing.T) {
	ref := "registry.lab:5000/xrun/quick:abcdef012345-c0dec0dec0de"
	pod := JobObject(cacheSpec(), ref, "0123456789ab", "", nil).Spec.Template.Spec
	want := CacheHostDir + "/" + testCache
	var vol *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == cacheVolumeName {
			vol = &pod.Volumes[i]
		}
	}
	if vol == nil || vol.HostPath == nil || vol.HostPath.Path != want || vol.HostPath.Type == nil || *vol.HostPath.Type != corev1.HostPathDirectoryOrCreate {
		t.Fatalf("cache volume %+v, want hostPath %s (DirectoryOrCreate)", vol, want)
	}
	runner := pod.Containers[0]
	if !slices.ContainsFunc(runner.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == cacheVolumeName && m.MountPath == contract.CacheDir && !m.ReadOnly
	}) {
		t.Errorf("runner mounts %+v, want the cache at %s", runner.VolumeMounts, contract.CacheDir)
	}
	if v, _ := envOf(runner, contract.EnvCacheVolume); v != want {
		t.Errorf("%s=%q, want the node's directory %s", contract.EnvCacheVolume, v, want)
	}
	if len(pod.InitContainers) != 1 {
		t.Fatalf("init containers %+v, want %s", pod.InitContainers, CacheInitName)
	}
	ic := pod.InitContainers[0]
	if ic.Name != CacheInitName || ic.Image != ref || !slices.Equal(ic.Command, []string{"chown", contract.JobUser, contract.CacheDir}) {
		t.Errorf("init container %s %s %v", ic.Name, ic.Image, ic.Command)
	}
	if len(ic.VolumeMounts) != 1 || ic.VolumeMounts[0].MountPath != contract.CacheDir || ic.VolumeMounts[0].Name != cacheVolumeName {
		t.Errorf("init container mounts %+v", ic.VolumeMounts)
	}
	sc := ic.SecurityContext
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		!slices.Equal(capNames(sc.Capabilities.Drop), []string{"ALL"}) || !slices.Equal(capNames(sc.Capabilities.Add), []string{"CHOWN"}) {
		t.Errorf("init container security context %+v", sc)
	}
	if len(ic.Env) != 0 {
		t.Errorf("the init container gets the job's environment: %v", ic.Env)
	}

	// Without a cache: no volume, mount, init container or variable.
	pod = JobObject(testSpec(), ref, "0123456789ab", "", nil).Spec.Template.Spec
	if len(pod.InitContainers) != 0 || len(pod.Volumes) != 1 || len(pod.Containers[0].VolumeMounts) != 1 {
		t.Errorf("a job without a cache: init %v, volumes %v", pod.InitContainers, pod.Volumes)
	}
	if _, ok := envOf(pod.Containers[0], contract.EnvCacheVolume); ok {
		t.Error("a job without a cache names one")
	}
}

func TestCachePath(t *testing.T) {
	if got := CachePath(testCache); got != "/var/lib/xrun/cache/"+testCache {
		t.Errorf("CachePath = %q", got)
	}
	for _, bad := range []string{"", ".", "..", "a/b", "../etc", "a\\b"} {
		if got := CachePath(bad); got != "" {
			t.Errorf("CachePath(%q) = %q, want none", bad, got)
		}
	}
	// A name that is no one directory's leaves the cache out.
	s := cacheSpec()
	s.CacheVolume = "../../etc"
	pod := JobObject(s, "r/x:1", "0123456789ab", "", nil).Spec.Template.Spec
	if len(pod.InitContainers) != 0 || len(pod.Volumes) != 1 {
		t.Errorf("a bad cache name was mounted: %+v", pod.Volumes)
	}
	if _, ok := envOf(pod.Containers[0], contract.EnvCacheVolume); ok {
		t.Error("a bad cache name is named")
	}
}

// A namespace whose Pod Security level refuses hostPath volumes gets a
// Job without the cache (its pod would never be made), and the submit
// says so; one without such a level, or that cannot be read, gets it.
func TestCreateCacheAndPodSecurity(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{nil, true},
		{map[string]string{PodSecurityEnforceLabel: "privileged"}, true},
		{map[string]string{PodSecurityEnforceLabel: "baseline"}, false},
		{map[string]string{PodSecurityEnforceLabel: "restricted"}, false},
	} {
		client := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lab", Labels: tc.labels}})
		var log bytes.Buffer
		b := &Backend{Client: client, Namespace: "lab", Log: &log}
		if err := b.Create(context.Background(), &store.Job{ID: "0123456789ab"}, cacheSpec()); err != nil {
			t.Fatal(err)
		}
		made, err := client.BatchV1().Jobs("lab").Get(context.Background(), JobName(testSpec().Name), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod := made.Spec.Template.Spec
		_, named := envOf(pod.Containers[0], contract.EnvCacheVolume)
		if got := len(pod.InitContainers) == 1; got != tc.want || named != tc.want {
			t.Errorf("%v: cache %v (named %v), want %v", tc.labels, got, named, tc.want)
		}
		if said := strings.Contains(log.String(), "empty compile caches"); said == tc.want {
			t.Errorf("%v: log %q", tc.labels, log.String())
		}
	}
	// A namespace the user may not read (here: none) keeps the cache.
	b := &Backend{Client: fake.NewClientset(), Namespace: "lab"}
	if err := b.Create(context.Background(), &store.Job{ID: "0123456789ab"}, cacheSpec()); err != nil {
		t.Fatal(err)
	}
	made, _ := b.Client.BatchV1().Jobs("lab").Get(context.Background(), JobName(testSpec().Name), metav1.GetOptions{})
	if len(made.Spec.Template.Spec.InitContainers) != 1 {
		t.Error("a namespace that cannot be read lost the cache")
	}
}

// Until the init container is done, what holds the pod up is its own:
// its image's pull, or its failure, which ends the job as xrun's (4), not
// as the runner's exit code.
func TestStateOfCacheInit(t *testing.T) {
	now := time.Now()
	job := JobObject(cacheSpec(), "r/x:1", "0123456789ab", "", nil)
	no := false
	job.Spec.Suspend = &no
	initializing := &corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}
	withInit := func(phase corev1.PodPhase, init corev1.ContainerState) corev1.Pod {
		p := pod("p1", now, phase, initializing.DeepCopy())
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: CacheInitName, State: init}}
		return p
	}
	pulling := withInit(corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "not found"}})
	if s := StateOf(job, []corev1.Pod{pulling}); s.Phase != backend.Pending || s.Detail != "ImagePullBackOff" || s.Message != "not found" {
		t.Errorf("init's image pulling: %+v", s)
	}
	running := withInit(corev1.PodPending, corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})
	if s := StateOf(job, []corev1.Pod{running}); s.Phase != backend.Pending || s.Detail != "PodInitializing" {
		t.Errorf("init running: %+v", s)
	}
	failed := withInit(corev1.PodFailed, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ContainerID: "containerd://b1", ExitCode: 1, Reason: "Error", Message: "chown: Operation not permitted"}})
	if s := StateOf(job, []corev1.Pod{failed}); s.Phase != backend.Exited || s.ExitCode != contract.ExitInfra || !strings.Contains(s.Message, "init container cache-owner exited 1") || !strings.Contains(s.Message, "Operation not permitted") {
		t.Errorf("init failed: %+v", s)
	}
	// A pod stopped (its deadline) while its volumes were still coming
	// shows the init container terminated without a container ID: it never
	// ran, and the pod's own reason is what ended the job.
	stopped := withInit(corev1.PodFailed, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown", Message: "The container could not be located when the pod was terminated"}})
	stopped.Status.Reason, stopped.Status.Message = "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
	if s := StateOf(job, []corev1.Pod{stopped}); s.Phase != backend.Exited || s.ExitCode != contract.ExitInfra || !s.TimedOut || s.Message != stopped.Status.Message {
		t.Errorf("stopped before init ran: %+v", s)
	}
	// Once it is done, the runner's status counts.
	done := withInit(corev1.PodRunning, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}})
	done.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}
	if s := StateOf(job, []corev1.Pod{done}); s.Phase != backend.Running {
		t.Errorf("init done, runner running: %+v", s)
	}
}
