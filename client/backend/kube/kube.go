// Package kube runs jobs as Kubernetes Jobs: the backend.Backend of a
// cluster, through client-go. The job image is built on a Docker host as
// for any job; the code goes on top of it as one more layer (a pod cannot
// be written into before it starts), and the result is pushed to the
// registry the cluster pulls from. The cluster schedules: GPUs are asked
// for as nvidia.com/gpu limits and gpu_type becomes a node affinity.
//
// The runner writes its output directory into its log at the end
// (runner/outlog): a finished pod keeps its log until the Job is deleted,
// not its files. A pod that is evicted or preempted is replaced by the Job
// controller (a pod failure policy ignores disruptions), and the job goes
// on in the new pod.
package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/buildctx"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/runner/contract"
	"github.com/xrun-dev/xrun/runner/outlog"
	"github.com/xrun-dev/xrun/runner/spec"
)

// Names on the cluster.
const (
	// ContainerName is the runner's container in a job's pod.
	ContainerName = "runner"
	// GPUResource is the extended resource of NVIDIA's device plugin.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
	// GPUProductLabel is the node label of NVIDIA's GPU feature discovery
	// naming the node's GPU ("NVIDIA-H100-80GB-HBM3").
	GPUProductLabel = "nvidia.com/gpu.product"
	// RefScheme starts the job records' Host of cluster jobs:
	// k8s://CONTEXT/NAMESPACE.
	RefScheme = "k8s://"
)

// DeadlineSlack is added to a job's timeout for the pod's own deadline:
// the client stops a job at its timeout; the cluster stops one that no
// client is watching a little later.
const DeadlineSlack = 5 * time.Minute

// Selection is how the user picked a cluster.
type Selection struct {
	// Kubeconfig is a kubeconfig file (default: KUBECONFIG, then ~/.kube/config).
	Kubeconfig string
	// Context is a context of the kubeconfig (default: its current one).
	Context string
	// Namespace (default: the context's, else "default").
	Namespace string
}

// IsRef reports whether a job record's Host names a cluster.
func IsRef(host string) bool { return strings.HasPrefix(host, RefScheme) }

// ParseRef is the selection a job record's Host names.
func ParseRef(host string) Selection {
	rest := strings.TrimPrefix(host, RefScheme)
	ctx, ns, _ := strings.Cut(rest, "/")
	return Selection{Context: ctx, Namespace: ns}
}

// Backend is one namespace of a cluster.
type Backend struct {
	Client    kubernetes.Interface
	Context   string
	Namespace string
	server    string

	// Builder is the Docker engine the code image is built on and pushed
	// from (Create only).
	Builder engine.Engine
	// Registry is where job images are pushed and the cluster pulls them
	// from ("registry.lab:5000", "localhost:5000/team").
	Registry string
	// PullSecret names a docker-registry secret of the namespace for pulls.
	PullSecret string
	// Log gets the progress of the code image's build and push.
	Log io.Writer
	// Poll is how often a job's state is read while waiting (default 1 s).
	Poll time.Duration
}

var _ backend.Collector = (*Backend)(nil)

// Connect loads the kubeconfig, picks the context and namespace, and asks
// the cluster for its version: a cluster that cannot be reached is an
// error that names it.
func Connect(ctx context.Context, sel Selection) (*Backend, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if sel.Kubeconfig != "" {
		rules.ExplicitPath = sel.Kubeconfig
	}
	over := &clientcmd.ConfigOverrides{CurrentContext: sel.Context}
	over.Context.Namespace = sel.Namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over)
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("read the kubeconfig: %w", err)
	}
	name := sel.Context
	if name == "" {
		name = raw.CurrentContext
	}
	if name == "" {
		return nil, errors.New("the kubeconfig has no current context: pass --context, or point KUBECONFIG at the cluster's kubeconfig (docs/kubernetes.md)")
	}
	if _, ok := raw.Contexts[name]; !ok {
		return nil, fmt.Errorf("the kubeconfig has no context %q (it has: %s)", name, strings.Join(contextNames(raw.Contexts), ", "))
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, err
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %s: %w", name, err)
	}
	cfg.UserAgent = "xrun"
	cfg.Timeout = 30 * time.Second
	// A command polls a job's state once a second, and follows its log
	// beside that: client-go's default of 5 requests a second is too few.
	cfg.QPS, cfg.Burst = 50, 100
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %s: %w", name, err)
	}
	b := &Backend{Client: c, Context: name, Namespace: ns, server: cfg.Host}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := c.Discovery().ServerVersion(); err != nil || pctx.Err() != nil {
		return nil, fmt.Errorf("cannot reach the cluster of context %s at %s: %v", name, cfg.Host, err)
	}
	return b, nil
}

func contextNames[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Where is k8s://CONTEXT/NAMESPACE.
func (b *Backend) Where() string { return RefScheme + b.Context + "/" + b.Namespace }

// Create builds and pushes the code image, then creates the Job suspended
// (Start lets it run).
func (b *Backend) Create(ctx context.Context, j *jobs.Job, s backend.Spec) error {
	if err := Supported(s); err != nil {
		return err
	}
	ref, err := b.pushCodeImage(ctx, s)
	if err != nil {
		return err
	}
	affinity, err := b.gpuAffinity(ctx, s.GPUType)
	if err != nil {
		return err
	}
	job := JobObject(s, ref, j.ID, b.PullSecret, affinity)
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

// Supported refuses what a Kubernetes Job cannot do as asked.
func Supported(s backend.Spec) error {
	if s.GPUs != nil && (len(s.GPUs.IDs) > 0 || s.GPUs.Count < 0) {
		return errors.New("--gpus with device ids or all does not apply on Kubernetes: the scheduler picks the GPUs; give a count")
	}
	if s.NoNetwork {
		return errors.New("--network none does not apply on Kubernetes: a NetworkPolicy of the namespace decides the job's network")
	}
	return nil
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

// pushCodeImage builds the job image plus the code on the builder (once
// per code) and pushes it.
func (b *Backend) pushCodeImage(ctx context.Context, s backend.Spec) (string, error) {
	if b.Registry == "" {
		return "", errors.New("no registry for the cluster to pull the job's image from: pass --registry HOST[:PORT][/PATH] or set XRUN_K8S_REGISTRY (docs/kubernetes.md)")
	}
	if b.Builder == nil {
		return "", errors.New("no Docker host to build the job's image on")
	}
	ref := CodeImage(b.Registry, s)
	logf := func(format string, args ...any) {
		if b.Log != nil {
			fmt.Fprintf(b.Log, format+"\n", args...)
		}
	}
	if ok, err := b.Builder.ImageExists(ctx, ref); err != nil {
		return "", err
	} else if !ok {
		logf("adding the code to %s as %s on %s", s.Image, ref, b.Builder.Host())
		df := []byte("FROM " + s.Image + "\nCOPY " + buildctx.Root + "/ " + contract.ExperimentDir + "/\n")
		code := s.Code
		if code == nil {
			code = &buildctx.Context{}
		}
		pr, pw := io.Pipe()
		go func() {
			pw.CloseWithError(code.WriteTar(pw, buildctx.Extra{Name: "Dockerfile", Mode: 0o644, Data: df}))
		}()
		_, err := b.Builder.Build(ctx, pr, engine.BuildOptions{Tag: ref}, func(string) {})
		pr.Close()
		if err != nil {
			return "", fmt.Errorf("add the code to the job image: %w", err)
		}
	}
	logf("pushing %s", ref)
	last := ""
	if err := b.Builder.Push(ctx, ref, func(line string) {
		if line != last && !strings.Contains(line, "Pushing [") {
			last = line
		}
	}); err != nil {
		return "", fmt.Errorf("%w (is the registry reachable from %s, and logged in with docker login?)", err, b.Builder.Host())
	}
	return ref, nil
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
// output written into its log.
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
	for _, kv := range s.Env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case contract.EnvImageRef:
			v = ref
		case contract.EnvHostName:
			continue // the builder's name: the node's comes below
		}
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	if s.PostToken != "" {
		// In the pod's spec, which whoever may read the namespace's
		// pods can read; never in the workers' environment (the runner
		// leaves it out), nor readable by them (another user).
		env = append(env, corev1.EnvVar{Name: contract.EnvPostToken, Value: s.PostToken})
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
	if s.Timeout > 0 {
		d := int64((s.Timeout + DeadlineSlack).Seconds())
		pod.ActiveDeadlineSeconds = &d
	}
	if pullSecret != "" {
		pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: pullSecret}}
	}
	backoff := int32(0)
	suspend := true
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: JobName(s.Name), Labels: labels, Annotations: annotations},
		Spec: batchv1.JobSpec{
			Suspend:      &suspend,
			BackoffLimit: &backoff,
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
func (b *Backend) Start(ctx context.Context, j *jobs.Job) error {
	patch := []byte(`{"spec":{"suspend":false}}`)
	_, err := b.Client.BatchV1().Jobs(b.Namespace).Patch(ctx, j.ContainerName, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("start Job %s: %w", j.ContainerName, notFound(err))
	}
	return nil
}

// job returns j's Job; one of the same name but another uid is not it.
func (b *Backend) job(ctx context.Context, j *jobs.Job) (*batchv1.Job, error) {
	job, err := b.Client.BatchV1().Jobs(b.Namespace).Get(ctx, j.ContainerName, metav1.GetOptions{})
	if err != nil {
		return nil, notFound(err)
	}
	if j.ContainerID != "" && string(job.UID) != j.ContainerID {
		return nil, fmt.Errorf("Job %s was replaced by another of the same name: %w", j.ContainerName, backend.ErrNotFound)
	}
	return job, nil
}

// pods returns the pods of job id, newest first.
func (b *Backend) pods(ctx context.Context, id string) ([]corev1.Pod, error) {
	list, err := b.Client.CoreV1().Pods(b.Namespace).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelJob + "=" + id})
	if err != nil {
		return nil, err
	}
	pods := list.Items
	sort.Slice(pods, func(x, y int) bool { return pods[y].CreationTimestamp.Before(&pods[x].CreationTimestamp) })
	return pods, nil
}

func (b *Backend) State(ctx context.Context, j *jobs.Job) (backend.State, error) {
	job, err := b.job(ctx, j)
	if err != nil {
		return backend.State{}, err
	}
	pods, err := b.pods(ctx, j.ID)
	if err != nil {
		return backend.State{}, err
	}
	return StateOf(job, pods), nil
}

// StateOf is a Job's state from the Job and its pods (newest first).
func StateOf(job *batchv1.Job, pods []corev1.Pod) backend.State {
	s := backend.State{Phase: backend.Pending, Detail: "created", Timeout: job.Annotations[contract.LabelTimeout]}
	if c := job.Spec.Template.Spec.Containers; len(c) > 0 {
		s.MemoryBytes = c[0].Resources.Limits.Memory().Value()
	}
	failed := jobCondition(job, batchv1.JobFailed)
	if job.Spec.Suspend != nil && *job.Spec.Suspend {
		return s
	}
	if len(pods) == 0 {
		if failed != nil {
			s.Phase, s.Detail, s.ExitCode = backend.Exited, failed.Reason, contract.ExitInfra
			s.Message, s.FinishedAt = failed.Message, failed.LastTransitionTime.Time
			return s
		}
		s.Detail, s.Message = "pending", "waiting for the Job controller to make the job's pod"
		return s
	}
	pod := pods[0]
	if pod.Status.StartTime != nil {
		s.StartedAt = pod.Status.StartTime.Time
	}
	disrupted := podCondition(&pod, corev1.DisruptionTarget)
	if disrupted != nil && disrupted.Status == corev1.ConditionTrue && failed == nil && jobCondition(job, batchv1.JobComplete) == nil {
		// The Job controller replaces a disrupted pod: the job goes on.
		s.Detail, s.Message = "replacing", fmt.Sprintf("pod %s was disrupted (%s: %s); the Job controller makes a new one", pod.Name, disrupted.Reason, disrupted.Message)
		return s
	}
	var cs *corev1.ContainerStatus
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == ContainerName {
			cs = &pod.Status.ContainerStatuses[i]
		}
	}
	timedOut := pod.Status.Reason == "DeadlineExceeded"
	switch {
	case cs != nil && cs.State.Terminated != nil:
		t := cs.State.Terminated
		s.Phase, s.Detail, s.ExitCode = backend.Exited, "exited", int(t.ExitCode)
		s.OOMKilled = t.Reason == "OOMKilled"
		s.StartedAt, s.FinishedAt = t.StartedAt.Time, t.FinishedAt.Time
		s.TimedOut = timedOut
		if t.ExitCode != 0 {
			s.Message = t.Reason
		}
	case cs != nil && cs.State.Running != nil:
		s.Phase, s.Detail, s.StartedAt = backend.Running, "running", cs.State.Running.StartedAt.Time
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded || failed != nil:
		// Ended before the runner ran: its deadline while the image was
		// pulled, or a node that went away.
		s.Phase, s.Detail, s.ExitCode = backend.Exited, string(pod.Status.Phase), contract.ExitInfra
		s.Message, s.TimedOut = pod.Status.Message, timedOut
		if s.Message == "" && failed != nil {
			s.Message = failed.Message
		}
		s.FinishedAt = time.Now()
	case cs != nil && cs.State.Waiting != nil:
		s.Detail, s.Message = cs.State.Waiting.Reason, cs.State.Waiting.Message
	default:
		if c := podCondition(&pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
			s.Detail, s.Message = strings.ToLower(c.Reason), c.Message
		} else {
			s.Detail = strings.ToLower(string(pod.Status.Phase))
		}
	}
	return s
}

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i, c := range pod.Status.Conditions {
		if c.Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func (b *Backend) poll() time.Duration {
	if b.Poll > 0 {
		return b.Poll
	}
	return time.Second
}

// Wait polls the job's state until its runner has exited.
func (b *Backend) Wait(ctx context.Context, j *jobs.Job) (backend.State, error) {
	t := time.NewTicker(b.poll())
	defer t.Stop()
	for {
		s, err := b.State(ctx, j)
		if err != nil && ctx.Err() == nil {
			if d, ok := ctx.Deadline(); ok && time.Until(d) < b.poll() {
				// The client's rate limiter refuses a request that would
				// end past the deadline: that is the deadline, not an error.
				<-ctx.Done()
				return s, ctx.Err()
			}
		}
		if err != nil || s.Finished() {
			return s, err
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-t.C:
		}
	}
}

// Logs writes the runner's log without the output frame. Following, it
// waits for the runner to start, and goes on with the pod that replaces
// an evicted one.
func (b *Backend) Logs(ctx context.Context, j *jobs.Job, o backend.LogOptions, stdout, _ io.Writer) error {
	if _, err := b.job(ctx, j); err != nil {
		return err
	}
	seen := map[string]bool{}
	for {
		pod, err := b.logPod(ctx, j, o.Follow, seen)
		if err != nil || pod == "" {
			return err
		}
		seen[pod] = true
		opts := &corev1.PodLogOptions{Container: ContainerName, Follow: o.Follow, Timestamps: o.Timestamps}
		if n, err := strconv.ParseInt(o.Tail, 10, 64); err == nil {
			opts.TailLines = &n
		}
		rc, err := b.Client.CoreV1().Pods(b.Namespace).GetLogs(pod, opts).Stream(ctx)
		if err != nil {
			return fmt.Errorf("logs of pod %s: %w", pod, notFound(err))
		}
		f := outlog.Filter(stdout)
		_, err = io.Copy(f, rc)
		rc.Close()
		f.Close()
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("logs of pod %s: %w", pod, err)
		}
		if !o.Follow || ctx.Err() != nil {
			return nil
		}
		if s, err := b.State(ctx, j); err != nil || s.Finished() {
			return nil
		}
	}
}

// logPod is the pod whose log to read: the newest one whose runner has
// started. Following, it waits for one it has not read yet; else "" when
// there is none.
func (b *Backend) logPod(ctx context.Context, j *jobs.Job, follow bool, seen map[string]bool) (string, error) {
	for {
		pods, err := b.pods(ctx, j.ID)
		if err != nil {
			return "", err
		}
		for _, p := range pods {
			if seen[p.Name] {
				continue
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == ContainerName && (cs.State.Running != nil || cs.State.Terminated != nil) {
					return p.Name, nil
				}
			}
		}
		if !follow {
			if len(seen) == 0 {
				return "", fmt.Errorf("job %s has no log yet: its runner has not started: %w", j.ID, backend.ErrNotFound)
			}
			return "", nil
		}
		if s, err := b.State(ctx, j); err != nil || s.Finished() {
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", nil
		case <-time.After(b.poll()):
		}
	}
}

// CopyOut unpacks the output frame from the log of the job's newest pod
// that ran.
func (b *Backend) CopyOut(ctx context.Context, j *jobs.Job) (io.ReadCloser, error) {
	_, out, err := b.collect(ctx, j)
	return out, err
}

// Collect reads the log of the job's newest pod that ran once, and returns
// it without the output frame beside the frame's output (backend.Collector);
// the log is nil when no pod of the job ran.
func (b *Backend) Collect(ctx context.Context, j *jobs.Job) ([]byte, io.ReadCloser, error) {
	if _, err := b.job(ctx, j); err != nil {
		return nil, nil, err
	}
	logs, out, err := b.collect(ctx, j)
	if logs == nil && errors.Is(err, backend.ErrNotFound) {
		return nil, nil, fmt.Errorf("job %s has no log yet: its runner has not started: %w", j.ID, backend.ErrNotFound)
	}
	return logs, out, err
}

// collect is Collect without the check that the Job is still there; logs
// is nil when no pod of the job ran.
func (b *Backend) collect(ctx context.Context, j *jobs.Job) (logs []byte, out io.ReadCloser, err error) {
	pods, err := b.pods(ctx, j.ID)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range pods {
		ran := false
		for _, cs := range p.Status.ContainerStatuses {
			ran = ran || cs.Name == ContainerName && (cs.State.Running != nil || cs.State.Terminated != nil)
		}
		if !ran {
			continue
		}
		data, err := b.Client.CoreV1().Pods(b.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: ContainerName}).DoRaw(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("logs of pod %s: %w", p.Name, notFound(err))
		}
		tarData, rest, err := outlog.Extract(data)
		if rest == nil {
			rest = []byte{} // the pod ran: an empty log is still its log
		}
		if errors.Is(err, outlog.ErrNoFrame) {
			return rest, nil, fmt.Errorf("pod %s: the runner wrote no output into its log (it is running, or died): %w", p.Name, backend.ErrNotFound)
		}
		if err != nil {
			return rest, nil, fmt.Errorf("pod %s: %w", p.Name, err)
		}
		return rest, io.NopCloser(bytes.NewReader(tarData)), nil
	}
	return nil, nil, fmt.Errorf("job %s: no pod of it ran: %w", j.ID, backend.ErrNotFound)
}

// Stop ends the runner with SIGTERM and keeps its pod (and so its log):
// the pod's deadline is brought forward to now, which the kubelet enforces
// with the pod's grace period. A job whose runner has not started is
// deleted: it has nothing to keep.
func (b *Backend) Stop(ctx context.Context, j *jobs.Job, grace time.Duration) error {
	if _, err := b.job(ctx, j); err != nil {
		return err
	}
	pods, err := b.pods(ctx, j.ID)
	if err != nil {
		return err
	}
	if len(pods) == 0 || pods[0].Status.StartTime == nil {
		return b.Remove(ctx, j, true)
	}
	pod := pods[0]
	if pod.Status.Phase != corev1.PodRunning && pod.Status.Phase != corev1.PodPending {
		return nil
	}
	secs := max(int64(time.Since(pod.Status.StartTime.Time).Seconds()), 1)
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil && *d < secs {
		secs = *d
	}
	patch := []byte(fmt.Sprintf(`{"spec":{"activeDeadlineSeconds":%d}}`, secs))
	if _, err := b.Client.CoreV1().Pods(b.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("stop pod %s: %w", pod.Name, notFound(err))
	}
	// The kubelet sends SIGTERM, then SIGKILL after the pod's grace.
	wctx, cancel := context.WithTimeout(ctx, grace+30*time.Second)
	defer cancel()
	_, err = b.Wait(wctx, j)
	if wctx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("pod %s did not stop within %s of its deadline", pod.Name, grace+30*time.Second)
	}
	return err
}

// Remove deletes the Job and its pods.
func (b *Backend) Remove(ctx context.Context, j *jobs.Job, force bool) error {
	policy := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &policy}
	if j.ContainerID != "" {
		uid := types.UID(j.ContainerID)
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	if !force {
		s, err := b.State(ctx, j)
		if err != nil {
			return err
		}
		if !s.Finished() {
			return fmt.Errorf("job %s is %s: cancel it first, or pass --force", j.ID, s.Detail)
		}
	}
	if err := b.Client.BatchV1().Jobs(b.Namespace).Delete(ctx, j.ContainerName, opts); err != nil {
		return fmt.Errorf("delete Job %s: %w", j.ContainerName, notFound(err))
	}
	return nil
}

// ImagesInUse returns the images of the containers of the cluster's xrun
// Jobs in every namespace: a registry shared by several namespaces must keep
// what any of them still runs or may run again. A user who may not list
// Jobs in every namespace gets an error that says so.
func (b *Backend) ImagesInUse(ctx context.Context) (map[string]bool, error) {
	list, err := b.Client.BatchV1().Jobs(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelJob})
	if err != nil {
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("list the Jobs of every namespace of %s, to keep the images they use: %w", b.Context, err)
		}
		return nil, fmt.Errorf("list Jobs of %s: %w", b.Context, err)
	}
	used := map[string]bool{}
	for _, k := range list.Items {
		for _, c := range k.Spec.Template.Spec.Containers {
			used[c.Image] = true
		}
	}
	return used, nil
}

// List returns the namespace's xrun Jobs.
func (b *Backend) List(ctx context.Context, all bool) ([]backend.Listed, error) {
	list, err := b.Client.BatchV1().Jobs(b.Namespace).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelJob})
	if err != nil {
		return nil, fmt.Errorf("list Jobs in namespace %s of %s: %w", b.Namespace, b.Context, err)
	}
	pods, err := b.Client.CoreV1().Pods(b.Namespace).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelJob})
	if err != nil {
		return nil, fmt.Errorf("list pods in namespace %s of %s: %w", b.Namespace, b.Context, err)
	}
	byJob := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		id := p.Labels[contract.LabelJob]
		byJob[id] = append(byJob[id], p)
	}
	var out []backend.Listed
	for i := range list.Items {
		job := &list.Items[i]
		id := job.Labels[contract.LabelJob]
		ps := byJob[id]
		sort.Slice(ps, func(x, y int) bool { return ps[y].CreationTimestamp.Before(&ps[x].CreationTimestamp) })
		s := StateOf(job, ps)
		if !all && s.Finished() {
			continue
		}
		a := job.Annotations
		out = append(out, backend.Listed{State: s, Job: jobs.Job{
			ID: id, Host: b.Where(), ContainerID: string(job.UID), ContainerName: job.Name,
			Experiment: a[contract.LabelExperiment], ImageRef: a[contract.LabelImage],
			SpecHash: a[contract.LabelSpecHash], GPUs: a[contract.LabelGPUs], Mode: a[contract.LabelMode],
			Timeout: a[contract.LabelTimeout], Created: job.CreationTimestamp.Time,
		}})
	}
	return out, nil
}

// notFound turns the API's not-found into the backend's.
func notFound(err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w (%w)", err, backend.ErrNotFound)
	}
	return err
}
