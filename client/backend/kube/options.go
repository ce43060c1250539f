package kube

import "github.com/xrun-dev/xrun/client/backend"

// Flag is the option that picks a Kubernetes cluster.
const Flag = "--k8s"

// RegistryEnv is the environment variable that gives --registry.
const RegistryEnv = "XRUN_K8S_REGISTRY"

// HostOptions pick a cluster and its namespace, for every command that
// looks at jobs: --k8s (into picked), --kubeconfig and --namespace.
func HostOptions(picked *bool, sel *Selection) []backend.Option {
	return []backend.Option{
		{Name: "k8s", Env: []string{"XRUN_K8S"}, Usage: "a Kubernetes cluster (the kubeconfig's current context, or --context) instead of a Docker host; see docs/kubernetes.md", Switch: picked},
		{Name: "kubeconfig", Env: []string{"XRUN_KUBECONFIG"}, Usage: "with --k8s: the kubeconfig file (default: KUBECONFIG, then ~/.kube/config)", Value: backend.StringValue(&sel.Kubeconfig)},
		{Name: "namespace", Env: []string{"XRUN_NAMESPACE"}, Usage: "with --k8s: the namespace (default: the context's, else default)", Value: backend.StringValue(&sel.Namespace)},
	}
}

// SubmitOptions are a submit's registry, which the cluster pulls the
// job's image from, and the secret it pulls with.
func SubmitOptions(registry, pullSecret *string) []backend.Option {
	return []backend.Option{
		{Name: "registry", Env: []string{RegistryEnv}, Usage: "with --k8s: the registry the cluster pulls job images from, HOST[:PORT][/PATH] (pushed with docker login's credentials)", Value: backend.StringValue(registry)},
		{Name: "pull-secret", Env: []string{"XRUN_K8S_PULL_SECRET"}, Usage: "with --k8s: a docker-registry secret of the namespace for pulling the job image", Value: backend.StringValue(pullSecret)},
	}
}

// PruneOptions are prune's registry: the one the cluster's job images
// are in.
func PruneOptions(registry *string) []backend.Option {
	return []backend.Option{
		{Name: "registry", Env: []string{RegistryEnv}, Usage: "with --k8s: the registry the cluster pulls job images from, HOST[:PORT][/PATH] (read and deleted from with docker login's credentials)", Value: backend.StringValue(registry)},
	}
}

// SubmitHelp is what submit's help says of a Kubernetes cluster.
const SubmitHelp = `With --k8s the job runs as a Kubernetes Job on the cluster of the kubeconfig
(--context picks a context, --namespace a namespace): the image is built on the
Docker host (--host, default the local one), the code added as one layer, and
pushed to --registry, which the cluster pulls from. GPUs are nvidia.com/gpu
limits and gpu_type a node affinity; the cluster's scheduler places the job.
See docs/kubernetes.md.`

// PruneHelp is what prune's help says of a Kubernetes cluster.
const PruneHelp = `With --k8s it prunes the cluster's registry instead (--registry, as given to
submit): the job images under REGISTRY/xrun/ that no Job of the cluster, in any
namespace, names, pushed more than --older-than ago. The registry must allow
deletes; its garbage collection then frees their layers. A cluster's compile
caches are directories of its nodes (/var/lib/xrun/cache), which prune leaves
to the cluster's admin (docs/kubernetes.md).`

// SubmitExample and PruneExample are a line of each command's examples.
const (
	SubmitExample = "xrun submit --k8s --context lab --registry registry.lab:5000 --gpus 2 experiments/039-gla-pingpong"
	PruneExample  = "xrun prune --k8s --registry registry.lab:5000 --dry-run"
)
