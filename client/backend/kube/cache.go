package kube

import (
	"context"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/contract"
)

// CacheHostDir holds the compile caches on a cluster's nodes: one
// directory per cache (backend.Spec.CacheVolume, named as a Docker host's
// volume), made by the kubelet on first use and mounted at
// contract.CacheDir. Each node keeps its own.
const CacheHostDir = "/var/lib/xrun/cache"

// Names in the pod of a job with a compile cache.
const (
	cacheVolumeName = "cache"
	// CacheInitName is the init container that gives the node's cache
	// directory to the job user.
	CacheInitName = "cache-owner"
)

// PodSecurityEnforceLabel is the namespace label that says which Pod
// Security level the admission enforces on the namespace's pods.
const PodSecurityEnforceLabel = "pod-security.kubernetes.io/enforce"

// CachePath is the node's directory of the compile cache named name, or
// "" for a name that is not one directory's.
func CachePath(name string) string {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return ""
	}
	return path.Join(CacheHostDir, name)
}

// cacheAllowed reports whether the namespace's pods may mount a node's
// directory: Pod Security's baseline and restricted levels refuse any
// hostPath volume, and the Job controller would then never make the job's
// pod. A namespace the user may not read is taken to allow it (its pods'
// admission is the cluster's; --no-cache-volume leaves the cache out).
func (b *Backend) cacheAllowed(ctx context.Context) (bool, string) {
	ns, err := b.Client.CoreV1().Namespaces().Get(ctx, b.Namespace, metav1.GetOptions{})
	if err != nil {
		return true, ""
	}
	switch level := ns.Labels[PodSecurityEnforceLabel]; level {
	case "baseline", "restricted":
		return false, level
	}
	return true, ""
}

// withoutCache is s without its compile cache.
func withoutCache(s backend.Spec) backend.Spec {
	s.CacheVolume, s.CacheLabels, s.CacheLimit = "", nil, 0
	return s
}

// addCache mounts the node's directory of the compile cache at
// contract.CacheDir in pod, whose runner container is c, and gives it to
// the job user first: the kubelet makes a new directory as root, mode
// 0755. The init container runs the job image's chown as root with
// CAP_CHOWN alone, on the directory itself (not what is in it: the job
// user wrote that).
func addCache(pod *corev1.PodSpec, c *corev1.Container, dir, ref string) {
	hostType := corev1.HostPathDirectoryOrCreate
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: cacheVolumeName, VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hostType},
	}})
	mount := corev1.VolumeMount{Name: cacheVolumeName, MountPath: contract.CacheDir}
	c.VolumeMounts = append(c.VolumeMounts, mount)
	root, no := int64(0), false
	pod.InitContainers = append(pod.InitContainers, corev1.Container{
		Name:            CacheInitName,
		Image:           ref,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"chown", contract.JobUser, contract.CacheDir},
		VolumeMounts:    []corev1.VolumeMount{mount},
		// chown's complaint, for the job's state.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                &root,
			RunAsGroup:               &root,
			RunAsNonRoot:             &no,
			AllowPrivilegeEscalation: &no,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"CHOWN"}},
		},
	})
}
