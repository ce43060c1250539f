package kube

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// Stop ends the runner with SIGTERM and keeps its pod (and so its log):
// the pod's deadline is brought forward to now, which the kubelet enforces
// with the pod's grace period. A job whose runner's container has not been
// created yet is deleted: it has nothing to keep, and a kubelet that waits
// for the pod's volumes or image enforces no deadline until that wait ends.
func (b *Backend) Stop(ctx context.Context, j *store.Job, grace time.Duration) error {
	if _, err := b.job(ctx, j); err != nil {
		return err
	}
	pods, err := b.pods(ctx, j.ID)
	if err != nil {
		return err
	}
	if len(pods) == 0 || !runnerStarted(&pods[0]) {
		if err := b.Remove(ctx, j, true); err != nil {
			return err
		}
		return fmt.Errorf("deleted Job %s: %w", j.ContainerName, backend.ErrNotStarted)
	}
	pod := pods[0]
	if pod.Status.Phase != corev1.PodRunning && pod.Status.Phase != corev1.PodPending {
		return nil
	}
	secs := int64(1)
	if pod.Status.StartTime != nil {
		secs = max(int64(time.Since(pod.Status.StartTime.Time).Seconds()), 1)
	}
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
		return fmt.Errorf("pod %s did not stop within %s of its deadline: its node's kubelet stops it when it next looks at the pod, and `xrun rm --force %s` deletes it", pod.Name, grace+30*time.Second, j.ID)
	}
	return err
}

// Remove deletes the Job and its pods.
func (b *Backend) Remove(ctx context.Context, j *store.Job, force bool) error {
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
			return &backend.RunningError{JobID: j.ID, State: s.Detail}
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
		out = append(out, backend.Listed{State: s, Job: store.Job{
			ID: id, Host: b.Where(), ContainerID: string(job.UID), ContainerName: job.Name,
			Experiment: a[contract.LabelExperiment], ImageRef: a[contract.LabelImage],
			SpecHash: a[contract.LabelSpecHash], GPUs: a[contract.LabelGPUs], Mode: a[contract.LabelMode],
			Timeout: a[contract.LabelTimeout], Created: job.CreationTimestamp.Time, Owner: a[contract.LabelOwner],
		}})
	}
	return out, nil
}
