// Package kube runs jobs as Kubernetes Jobs: the backend.Backend of a
// cluster, through client-go. The job image is built on a Docker host as
// for any job; the code goes on top of it as one more layer (a pod cannot
// be written into before it starts), and the result is pushed to the
// registry the cluster pulls from. The cluster schedules: GPUs are asked
// for as nvidia.com/gpu limits and gpu_type becomes a node affinity.
//
// The runner writes its output directory into its log at the end
// (contract.WriteOut): a finished pod keeps its log until the Job is deleted,
// not its files. A pod that is evicted or preempted is replaced by the Job
// controller (a pod failure policy ignores disruptions), and the job goes
// on in the new pod.
package kube

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
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

// DefaultPendingLimit is how long a job with a timeout waits for a node
// when its submit gives no --pending-limit, as on Slurm.
const DefaultPendingLimit = 24 * time.Hour

// annotationPendingLimit keeps a Job's pending limit, for the story of a
// job that no node took.
const annotationPendingLimit = "dev.xrun.pending-limit"

// pendingLimit is how long s may wait for a node.
func pendingLimit(s backend.Spec) time.Duration {
	if s.PendingLimit > 0 {
		return s.PendingLimit
	}
	return DefaultPendingLimit
}

// requestTimeout bounds each request of Backend.Client: a cluster that
// stops answering is an error, not a hang. Followed logs go through
// Backend.Stream, which has no such bound.
var requestTimeout = 30 * time.Second

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

// Capabilities is what a Kubernetes Job lacks and needs: its scheduler
// places it, the namespace's policies set its network, and its nodes pull
// its image from a registry.
var Capabilities = backend.Capabilities{
	Name: "Kubernetes",
	Flag: Flag,
	Lacks: map[backend.Feature]string{
		backend.GPUsByID:  "the scheduler picks the GPUs; give a count",
		backend.NoNetwork: "a NetworkPolicy of the namespace decides the job's network",
	},
	Needs: map[backend.Setting]string{
		backend.Registry: "the cluster pulls the job's image from one (docs/kubernetes.md)",
	},
	NoConfirm:       "it ran on a Kubernetes cluster, which picks the GPU",
	StoppedBy:       "kubectl delete of its pod or Job, a node drain, or a preemption",
	CachesElsewhere: "a cluster's compile caches are directories of its nodes (" + CacheHostDir + "), which prune does not reach; docs/kubernetes.md says how the cluster's admin cleans them",
}

// Backend is one namespace of a cluster.
type Backend struct {
	Client kubernetes.Interface
	// Stream is Client without its overall timeout, for a followed log:
	// that request lasts as long as the job runs, and ends with its
	// context. Nil: Client.
	Stream    kubernetes.Interface
	Context   string
	Namespace string
	server    string

	// Log gets the progress of the code image's build and push, and
	// what a submit leaves out (the compile cache).
	Log io.Writer
	// Poll is how often a job's state is read while waiting (default 1 s).
	Poll time.Duration

	// followed are the logs this backend followed, for the output of a
	// pod that is gone (followed.go).
	followed followed
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
		return nil, &backend.MissingError{Setting: backend.KubeContext, Why: "the kubeconfig has no current context (docs/kubernetes.md)"}
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
	// A command polls a job's state once a second, and follows its log
	// beside that: client-go's default of 5 requests a second is too few.
	cfg.QPS, cfg.Burst = 50, 100
	// The timeout is the whole request's, body included: on the client
	// that follows a log it would cut the log off after that long.
	streamCfg := rest.CopyConfig(cfg)
	streamCfg.Timeout = 0
	cfg.Timeout = requestTimeout
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %s: %w", name, err)
	}
	sc, err := kubernetes.NewForConfig(streamCfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %s: %w", name, err)
	}
	b := &Backend{Client: c, Stream: sc, Context: name, Namespace: ns, server: cfg.Host}
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

// Ran reports whether job j's record is of a Job of a Kubernetes cluster.
func (b *Backend) Ran(j *store.Job) bool { return IsRef(j.Host) }

// Handle names the job's Kubernetes Job (backend.Handler).
func (b *Backend) Handle(j *store.Job) string { return "Job " + j.ContainerName }

// Describe names what runs job j, for xrun status: a Kubernetes Job and
// its pods, not a container.
func Describe(j *store.Job) (rows [][2]string, state string) {
	return [][2]string{{"kubernetes job", j.ContainerName}}, "pod state"
}

// notFound turns the API's not-found into the backend's.
func notFound(err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w (%w)", err, backend.ErrNotFound)
	}
	return err
}
