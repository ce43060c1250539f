package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// job returns j's Job; one of the same name but another uid is not it.
func (b *Backend) job(ctx context.Context, j *store.Job) (*batchv1.Job, error) {
	if j.ContainerName == "" {
		// Create made no Job for it (it refused the spec, or was stopped
		// first): there is none to ask the API server for.
		return nil, fmt.Errorf("job %s has no Kubernetes Job: %w", j.ID, backend.ErrNotFound)
	}
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

func (b *Backend) State(ctx context.Context, j *store.Job) (backend.State, error) {
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
			switch {
			case failed.Reason == batchv1.JobReasonDeadlineExceeded:
				s.TimedOut, s.Message = true, jobDeadlineMessage(job, "")
			case podDeleted(job, pods):
				// Stopped outside xrun, as a runner that got SIGTERM says.
				s.Detail, s.ExitCode = "pod deleted", contract.ExitCancelled
				s.Message = "its pod was deleted, and the Job made no other"
			}
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
	// Until its init containers are done, the runner waits as
	// PodInitializing: what holds the pod up (its image's pull, a failed
	// init) is said by the init container's status.
	if init := pendingInit(&pod); init != nil && (cs == nil || cs.State.Waiting != nil) {
		cs = init
	}
	timedOut := pod.Status.Reason == "DeadlineExceeded"
	switch {
	case cs != nil && cs.Name != ContainerName && cs.State.Terminated != nil && cs.State.Terminated.ContainerID != "":
		// An init container failed: the runner never ran.
		t := cs.State.Terminated
		s.Phase, s.Detail, s.ExitCode = backend.Exited, "init failed", contract.ExitInfra
		s.Message = strings.TrimSpace(fmt.Sprintf("init container %s exited %d (%s): %s", cs.Name, t.ExitCode, t.Reason, t.Message))
		s.TimedOut, s.FinishedAt = timedOut, t.FinishedAt.Time
	case cs != nil && cs.State.Terminated != nil && cs.State.Terminated.ContainerID != "":
		t := cs.State.Terminated
		s.Phase, s.Detail, s.ExitCode = backend.Exited, "exited", int(t.ExitCode)
		s.OOMKilled = t.Reason == "OOMKilled"
		s.StartedAt, s.FinishedAt = t.StartedAt.Time, t.FinishedAt.Time
		s.TimedOut = timedOut
		switch {
		case t.ExitCode == 0:
		case t.Reason == "Error" || t.Reason == "":
			// The kubelet's word for any non-zero exit: the exit code
			// says more (130 a cancelled runner, 3 a bad spec).
			s.Message = fmt.Sprintf("the runner exited with code %d", t.ExitCode)
		default:
			s.Message = t.Reason
		}
	case cs != nil && cs.State.Running != nil:
		s.Phase, s.Detail, s.StartedAt = backend.Running, "running", cs.State.Running.StartedAt.Time
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded || failed != nil:
		// Ended before the runner ran: its deadline (or a cancel) while
		// the image was pulled or the container created, or a node that
		// went away. The kubelet may show the runner's container
		// terminated then, without a container ID: it was never created.
		s.Phase, s.Detail, s.ExitCode = backend.Exited, string(pod.Status.Phase), contract.ExitInfra
		s.Message, s.TimedOut = pod.Status.Message, timedOut
		if s.Message == "" && failed != nil {
			s.Message = failed.Message
		}
		if failed != nil && failed.Reason == batchv1.JobReasonDeadlineExceeded {
			why := ""
			if c := podCondition(&pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
				why = c.Message
			}
			s.TimedOut, s.Message = true, jobDeadlineMessage(job, why)
			s.NoNode = why != ""
		}
		s.FinishedAt = time.Now()
	case cs != nil && cs.State.Waiting != nil:
		s.Detail, s.Message = cs.State.Waiting.Reason, cs.State.Waiting.Message
	default:
		if c := podCondition(&pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
			// The scheduler holds the pod until a node can take it.
			s.Detail, s.Message, s.Waiting = strings.ToLower(c.Reason), c.Message, true
		} else {
			s.Detail = strings.ToLower(string(pod.Status.Phase))
		}
	}
	return s
}

// jobDeadlineMessage says that the Job's own deadline (its pending limit,
// timeout and DeadlineSlack, counted from the submit) ended it; why is
// what kept its pod from a node, when it never got one.
func jobDeadlineMessage(job *batchv1.Job, why string) string {
	pending := job.Annotations[annotationPendingLimit]
	if why != "" && pending != "" {
		return fmt.Sprintf("no node took it within its pending limit (--pending-limit %s): %s", pending, why)
	}
	limit := "its deadline"
	if d := job.Spec.ActiveDeadlineSeconds; d != nil {
		limit = fmt.Sprintf("its deadline, %s after the submit (its timeout plus %s)", time.Duration(*d)*time.Second, DeadlineSlack)
		if pending != "" {
			limit = fmt.Sprintf("its deadline, %s after the submit (its pending limit, its timeout and %s)", time.Duration(*d)*time.Second, DeadlineSlack)
		}
	}
	if why != "" {
		return fmt.Sprintf("no node took it before %s: %s", limit, why)
	}
	return fmt.Sprintf("Kubernetes stopped it at %s", limit)
}

// pendingInit is the status of the first init container of pod that has
// not finished well, nil when there is none.
func pendingInit(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.InitContainerStatuses {
		ics := &pod.Status.InitContainerStatuses[i]
		if t := ics.State.Terminated; t != nil && t.ExitCode == 0 {
			continue
		}
		if ics.State.Running != nil {
			return nil // the runner's status says "PodInitializing"
		}
		return ics
	}
	return nil
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
func (b *Backend) Wait(ctx context.Context, j *store.Job) (backend.State, error) {
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

// podDeleted reports whether the Job failed for a pod that is gone: a pod
// of a Job that fails stays until the Job is deleted, and one disrupted
// (evicted, its node gone) is replaced, not counted; so a failed pod that
// is not listed was deleted by hand (kubectl delete pod).
func podDeleted(job *batchv1.Job, pods []corev1.Pod) bool {
	failed := jobCondition(job, batchv1.JobFailed)
	return len(pods) == 0 && failed != nil && failed.Reason == batchv1.JobReasonBackoffLimitExceeded && job.Status.Failed > 0
}
