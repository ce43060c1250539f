package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/buildctx"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/spec"
)

// Create builds and pushes the code image, then creates the Job suspended
// (Start lets it run).
func (b *Backend) Create(ctx context.Context, j *store.Job, s backend.Spec) error {
	if err := Capabilities.Refuse(s.Asks()...); err != nil {
		return err
	}
	affinity, err := b.gpuAffinity(ctx, s.GPUType)
	if err != nil {
		return err
	}
	if !s.WaitForNode {
		if err := b.checkFits(ctx, s); err != nil {
			return err
		}
	}
	ref, err := b.pushCodeImage(ctx, s)
	if err != nil {
		return err
	}
	if s.CacheVolume != "" {
		if ok, level := b.cacheAllowed(ctx); !ok {
			if b.Log != nil {
				fmt.Fprintf(b.Log, "namespace %s enforces Pod Security %s, which refuses a node's directory: the job starts with empty compile caches\n", b.Namespace, level)
			}
			s = withoutCache(s)
		}
	}
	job := JobObject(s, ref, j.ID, s.Push.PullSecret, affinity)
	job.Namespace = b.Namespace
	if err := ctx.Err(); err != nil {
		return err
	}
	// The create request is not cancelled with ctx: a request cut off
	// once it reached the API server can still make the Job, and the
	// client would never learn of it. Let it finish, then delete the Job
	// when ctx ended meanwhile.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backend.CreateTimeout)
	created, err := b.Client.BatchV1().Jobs(b.Namespace).Create(cctx, job, metav1.CreateOptions{})
	cancel()
	if err != nil {
		// A create that timed out or lost its connection may have made
		// the Job all the same: look for it by the job's label. A Job of
		// that name that was there before is not this request's to delete.
		if !apierrors.IsAlreadyExists(err) {
			b.deleteLeft(ctx, j.ID)
		}
		return fmt.Errorf("create Job %s in namespace %s: %w", job.Name, b.Namespace, err)
	}
	if s.PostToken != "" {
		if err := b.createTokenSecret(ctx, created, j.ID, s.PostToken); err != nil {
			b.deleteLeft(ctx, j.ID)
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		b.deleteLeft(ctx, j.ID)
		return err
	}
	j.ContainerName, j.ContainerID = created.Name, string(created.UID)
	j.ImageRef = ref
	return nil
}

// deleteLeft deletes the Jobs (and their pods) labelled as job id's, also
// once ctx is done.
func (b *Backend) deleteLeft(ctx context.Context, id string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backend.CleanupTimeout)
	defer cancel()
	list, err := b.Client.BatchV1().Jobs(b.Namespace).List(dctx, metav1.ListOptions{LabelSelector: contract.LabelJob + "=" + id})
	if err != nil {
		return
	}
	policy := metav1.DeletePropagationBackground
	for _, k := range list.Items {
		uid := k.UID
		b.Client.BatchV1().Jobs(b.Namespace).Delete(dctx, k.Name, metav1.DeleteOptions{
			PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
	}
}

// CodeImage is the reference the code image of s is pushed as: the job
// image's tag and the code's hash, under registry.
func CodeImage(registry string, s backend.Spec) string {
	name, tag, _ := strings.Cut(strings.TrimPrefix(s.Image, "xrun/"), ":")
	code := "nocode"
	if s.Code != nil {
		code = s.Code.Hash[:12]
	}
	return strings.TrimSuffix(registry, "/") + "/xrun/" + name + ":" + tag + "-" + code
}

// pushCodeImage builds the job image plus the code on the submit's
// builder (s.Push; once per code) and pushes it to the submit's registry.
func (b *Backend) pushCodeImage(ctx context.Context, s backend.Spec) (string, error) {
	if s.Push == nil || s.Push.Registry == "" {
		return "", &backend.MissingError{Setting: backend.Registry, Why: Capabilities.Needs[backend.Registry]}
	}
	if s.Push.Builder == nil {
		return "", errors.New("no Docker host to build the job's image on")
	}
	builder := s.Push.Builder
	ref := CodeImage(s.Push.Registry, s)
	logf := func(format string, args ...any) {
		if b.Log != nil {
			fmt.Fprintf(b.Log, format+"\n", args...)
		}
	}
	if ok, err := builder.ImageExists(ctx, ref); err != nil {
		return "", err
	} else if !ok {
		logf("adding the code to %s as %s on %s", s.Image, ref, builder.Host())
		df := []byte("FROM " + s.Image + "\nCOPY " + buildctx.Root + "/ " + contract.ExperimentDir + "/\n")
		code := s.Code
		if code == nil {
			code = &buildctx.Context{}
		}
		pr, pw := io.Pipe()
		go func() {
			pw.CloseWithError(code.WriteTar(pw, buildctx.Extra{Name: "Dockerfile", Mode: 0o644, Data: df}))
		}()
		_, err := builder.Build(ctx, pr, engine.BuildOptions{Tag: ref}, func(string) {})
		pr.Close()
		if err != nil {
			return "", fmt.Errorf("add the code to the job image: %w", err)
		}
	}
	logf("pushing %s", ref)
	if err := builder.Push(ctx, ref, pushProgress(ref, logf)); err != nil {
		// The tag for the registry is of no use here: the next submit
		// makes it again (its code layer is cached).
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backend.CleanupTimeout)
		builder.RemoveImage(rctx, ref)
		cancel()
		return "", fmt.Errorf("%w (is the registry reachable from %s, and logged in with docker login?)", err, builder.Host())
	}
	return ref, nil
}

// pushReport is how often a push says how far it got: a first push of a
// CUDA image's layers takes minutes.
var pushReport = 10 * time.Second

// pushProgress reads the daemon's push messages ("ID: Pushing", "ID:
// Pushed", "ID: Layer already exists") and says every pushReport how many
// of the image's layers are in the registry.
func pushProgress(ref string, logf func(string, ...any)) func(string) {
	layers := map[string]bool{} // by id: in the registry
	start := time.Now()
	said := start
	return func(line string) {
		id, status, ok := strings.Cut(line, ": ")
		if !ok || len(id) != 12 {
			return
		}
		layers[id] = status == "Pushed" || status == "Layer already exists" || strings.HasPrefix(status, "Mounted from")
		if time.Since(said) < pushReport {
			return
		}
		said = time.Now()
		done := 0
		for _, in := range layers {
			if in {
				done++
			}
		}
		logf("pushing %s: %d of %d layers in the registry after %s", ref, done, len(layers), time.Since(start).Round(time.Second))
	}
}

// checkFits refuses, before anything is pushed or created, a job asking
// for more GPUs (nvidia.com/gpu), memory or CPUs than any node of the
// cluster offers: its pod would wait for good (until its pending limit).
// A client not allowed to list nodes leaves it to the scheduler, as does
// a cluster that lists no node at all.
func (b *Backend) checkFits(ctx context.Context, s backend.Spec) error {
	gpus := 0
	if s.GPUs != nil {
		gpus = s.GPUs.Count
	}
	if gpus <= 0 && s.MemoryBytes <= 0 && s.CPUs <= 0 {
		return nil
	}
	nodes, err := b.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsForbidden(err) {
			return nil
		}
		return fmt.Errorf("list the cluster's nodes: %w", err)
	}
	if len(nodes.Items) == 0 {
		return nil
	}
	// The most any node offers of each: the kubelet copies a device
	// plugin's capacity into allocatable a moment later.
	most := map[corev1.ResourceName]*resource.Quantity{}
	for _, n := range nodes.Items {
		for _, name := range []corev1.ResourceName{GPUResource, corev1.ResourceMemory, corev1.ResourceCPU} {
			for _, l := range []corev1.ResourceList{n.Status.Allocatable, n.Status.Capacity} {
				if q, ok := l[name]; ok && (most[name] == nil || q.Cmp(*most[name]) > 0) {
					most[name] = &q
				}
				if name != GPUResource {
					break // what the node keeps for itself is not the pods'
				}
			}
		}
	}
	value := func(name corev1.ResourceName) int64 {
		if q := most[name]; q != nil {
			return q.Value()
		}
		return 0
	}
	count := len(nodes.Items)
	switch {
	case gpus > 0 && int64(gpus) > value(GPUResource):
		have := fmt.Sprintf("the most any of its %d nodes offers is %d", count, value(GPUResource))
		if value(GPUResource) == 0 {
			have = fmt.Sprintf("none of its %d nodes offers any (%s)", count, GPUResource)
		}
		return &backend.RefusedError{Where: "the Kubernetes cluster",
			Reason: fmt.Sprintf("the job asks for %s and %s: pass --cpu, ask for fewer, or pass --queue to wait for a node that has them (an autoscaled cluster adds one)", plural(gpus, "GPU"), have)}
	case s.MemoryBytes > 0 && most[corev1.ResourceMemory] != nil && s.MemoryBytes > value(corev1.ResourceMemory):
		return &backend.RefusedError{Where: "the Kubernetes cluster",
			Reason: fmt.Sprintf("the job asks for %s of memory (resources.memory) and the most any of its %d nodes offers its pods is %s: ask for less, or pass --queue to wait for a node that has it (an autoscaled cluster adds one)",
				resource.NewQuantity(s.MemoryBytes, resource.BinarySI), count, most[corev1.ResourceMemory])}
	case s.CPUs > 0 && most[corev1.ResourceCPU] != nil && int64(s.CPUs)*1000 > most[corev1.ResourceCPU].MilliValue():
		return &backend.RefusedError{Where: "the Kubernetes cluster",
			Reason: fmt.Sprintf("the job asks for %s (--cpus or resources.cpus) and the most any of its %d nodes offers its pods is %s: ask for fewer, or pass --queue to wait for a node that has them (an autoscaled cluster adds one)",
				plural(s.CPUs, "CPU"), count, most[corev1.ResourceCPU].String())}
	}
	return nil
}

// plural is "1 GPU", "2 GPUs".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// gpuAffinity is the node affinity for gpu_type: the GPU products that the
// cluster's nodes advertise (nvidia.com/gpu.product) and that gpu_type
// names. A user who may not list nodes gets gpu_type as the label's value.
func (b *Backend) gpuAffinity(ctx context.Context, gpuType string) (*corev1.Affinity, error) {
	if gpuType == "" {
		return nil, nil
	}
	values := []string{gpuType}
	nodes, err := b.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: GPUProductLabel})
	if err == nil {
		seen := map[string]bool{}
		var all []string
		values = nil
		for _, n := range nodes.Items {
			v := n.Labels[GPUProductLabel]
			if seen[v] {
				continue
			}
			seen[v] = true
			all = append(all, v)
			if spec.IsGPUType(strings.ReplaceAll(v, "-", " "), gpuType) {
				values = append(values, v)
			}
		}
		if len(values) == 0 {
			have := "no node labels its GPUs (" + GPUProductLabel + ", from NVIDIA's GPU feature discovery)"
			if len(all) > 0 {
				sort.Strings(all)
				have = "its nodes have " + strings.Join(all, ", ")
			}
			return nil, fmt.Errorf("gpu_type %q: no node of the cluster has that GPU: %s", gpuType, have)
		}
	} else if !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("list the cluster's GPU nodes: %w", err)
	}
	sort.Strings(values)
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: GPUProductLabel, Operator: corev1.NodeSelectorOpIn, Values: values}},
		}}},
	}}, nil
}

var (
	invalidName = regexp.MustCompile(`[^a-z0-9-]+`)
	validLabel  = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)
)

// JobName is a valid Job name (DNS label) for name, keeping its end (the
// job id) when it has to be shortened.
func JobName(name string) string {
	n := strings.Trim(invalidName.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(n) > 52 { // the Job controller adds a suffix to its pods' names
		n = strings.TrimLeft(n[len(n)-52:], "-")
	}
	return n
}

// labelValue is v if it is a valid label value, else "".
func labelValue(v string) string {
	if len(v) > 63 || !validLabel.MatchString(v) {
		return ""
	}
	return v
}

// JobObject is the Job that runs spec s with image ref: suspended, never
// retried but for disruptions, the runner unprivileged unless s.Root, its
// output written into its log, and s.CacheVolume a directory of the node
// (CachePath).
func JobObject(s backend.Spec, ref, jobID, pullSecret string, affinity *corev1.Affinity) *batchv1.Job {
	labels := map[string]string{contract.LabelJob: jobID}
	if v := labelValue(s.Labels[contract.LabelExperiment]); v != "" {
		labels[contract.LabelExperiment] = v
	}
	annotations := map[string]string{}
	for k, v := range s.Labels {
		annotations[k] = v
	}
	annotations[contract.LabelImage] = ref
	var env []corev1.EnvVar
	// The pushed image, and the node's directory of the compile cache
	// (env.host names the node); the node's name comes below.
	for _, kv := range append(slices.Clone(s.Env), s.WhereEnv(ref, "", CachePath(s.CacheVolume))...) {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	env = append(env, corev1.EnvVar{Name: contract.EnvOutToLog, Value: "1"},
		corev1.EnvVar{Name: contract.EnvHostName, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}})
	res := corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}}
	if s.MemoryBytes > 0 {
		q := *resource.NewQuantity(s.MemoryBytes, resource.BinarySI)
		res.Limits[corev1.ResourceMemory], res.Requests[corev1.ResourceMemory] = q, q
	}
	if s.GPUs != nil && s.GPUs.Count > 0 {
		res.Limits[GPUResource] = *resource.NewQuantity(int64(s.GPUs.Count), resource.DecimalSI)
	}
	if s.CPUs > 0 {
		// Request and limit alike: whole CPUs the scheduler finds room for,
		// and cores of the pod's own where the kubelet's CPU manager policy
		// is static.
		q := *resource.NewQuantity(int64(s.CPUs), resource.DecimalSI)
		res.Limits[corev1.ResourceCPU], res.Requests[corev1.ResourceCPU] = q, q
	}
	container := corev1.Container{
		Name:            ContainerName,
		Image:           ref,
		Env:             env,
		Resources:       res,
		ImagePullPolicy: corev1.PullIfNotPresent,
		// The runner's last lines say why it failed; the log has them all.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts:             []corev1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}},
	}
	podSec := &corev1.PodSecurityContext{}
	if s.Root && len(s.CapAdd) > 0 {
		add := make([]corev1.Capability, len(s.CapAdd))
		for i, c := range s.CapAdd {
			add[i] = corev1.Capability(c)
		}
		container.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: add}}
	}
	if !s.Root {
		// The runner starts as root with the capabilities to run the
		// experiment as contract.JobUser and kill its processes, and no
		// others (runner/sandbox).
		root, no := int64(0), false
		podSec = &corev1.PodSecurityContext{RunAsUser: &root, RunAsGroup: &root, RunAsNonRoot: &no}
		add := make([]corev1.Capability, len(contract.RunnerCaps))
		for i, c := range contract.RunnerCaps {
			add[i] = corev1.Capability(c)
		}
		container.SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: &no,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: add},
		}
	}
	shm := resource.NewQuantity(s.ShmBytes, resource.BinarySI)
	grace := int64(10)
	noToken, noLinks := false, false
	pod := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: &grace,
		Containers:                    []corev1.Container{container},
		SecurityContext:               podSec,
		AutomountServiceAccountToken:  &noToken,
		EnableServiceLinks:            &noLinks,
		Affinity:                      affinity,
		Volumes: []corev1.Volume{{Name: "shm", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: shm},
		}}},
	}
	if dir := CachePath(s.CacheVolume); dir != "" {
		addCache(&pod, &pod.Containers[0], dir, ref)
	}
	if s.PostToken != "" {
		mountToken(&pod, &pod.Containers[0], JobName(s.Name))
	}
	if s.Timeout > 0 {
		d := int64((s.Timeout + DeadlineSlack).Seconds())
		pod.ActiveDeadlineSeconds = &d
	}
	if pullSecret != "" {
		pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: pullSecret}}
	}
	backoff := int32(0)
	suspend := true
	var jobDeadline *int64
	if s.Timeout > 0 {
		// Counted from the start (the Job's resume), a pod waiting for a
		// node included: a job that no node takes within its pending
		// limit ends all the same.
		d := int64((pendingLimit(s) + s.Timeout + DeadlineSlack).Seconds())
		jobDeadline = &d
		annotations[annotationPendingLimit] = pendingLimit(s).String()
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: JobName(s.Name), Labels: labels, Annotations: annotations},
		Spec: batchv1.JobSpec{
			Suspend:               &suspend,
			BackoffLimit:          &backoff,
			ActiveDeadlineSeconds: jobDeadline,
			// An evicted or preempted pod is replaced, not counted as
			// the job's failure; a runner that fails is not retried.
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			}}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec:       pod,
			},
		},
	}
}

// Start lets the suspended Job run.
func (b *Backend) Start(ctx context.Context, j *store.Job) error {
	patch := []byte(`{"spec":{"suspend":false}}`)
	_, err := b.Client.BatchV1().Jobs(b.Namespace).Patch(ctx, j.ContainerName, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("start Job %s: %w", j.ContainerName, notFound(err))
	}
	return nil
}
