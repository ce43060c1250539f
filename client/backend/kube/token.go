package kube

import (
	"context"
	"fmt"
	"path"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/contract"
)

// A job's POST token is a Secret of its own, mounted read-only as the
// runner's file contract.PostTokenFile (mode 0400, root's: the runner
// reads it, the experiment's code, as contract.JobUser, cannot), never
// in the pod's spec, which whoever may read the namespace's pods reads.
// The Secret is the Job's (an owner reference), so that the cluster's
// garbage collector deletes it with the Job: rm, prune and a cancel of a
// job that never started leave none behind.

// tokenVolume is the pod's volume of the token's Secret.
const tokenVolume = "post-token"

// TokenSecretName is the name of the Secret that holds the POST token of
// the Job named job.
func TokenSecretName(job string) string { return job + "-post-token" }

// mountToken adds the Secret of Job job's POST token to pod and mounts
// it in its runner's container c at contract.PostTokenFile.
func mountToken(pod *corev1.PodSpec, c *corev1.Container, job string) {
	mode := int32(0o400)
	key := path.Base(contract.PostTokenFile)
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: tokenVolume, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: TokenSecretName(job), DefaultMode: &mode,
			Items: []corev1.KeyToPath{{Key: key, Path: key}}},
	}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: tokenVolume, MountPath: contract.PostTokenFile, SubPath: key, ReadOnly: true})
}

// TokenSecret is the Secret that holds token for job, owned by it.
func TokenSecret(job *batchv1.Job, jobID, token string) *corev1.Secret {
	yes := true
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      TokenSecretName(job.Name),
			Namespace: job.Namespace,
			Labels:    map[string]string{contract.LabelJob: jobID},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
			}},
		},
		Type:      corev1.SecretTypeOpaque,
		Immutable: &yes,
		Data:      map[string][]byte{path.Base(contract.PostTokenFile): []byte(token)},
	}
}

// createTokenSecret creates the Secret of token for the created Job job,
// before it is started.
func (b *Backend) createTokenSecret(ctx context.Context, job *batchv1.Job, jobID, token string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backend.CreateTimeout)
	defer cancel()
	if _, err := b.Client.CoreV1().Secrets(b.Namespace).Create(cctx, TokenSecret(job, jobID, token), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Secret %s for the POST token in namespace %s (the job's runner reads it from there; your role there needs to create secrets): %w", TokenSecretName(job.Name), b.Namespace, err)
	}
	return nil
}
