package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/build"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/runner/harness"
	"github.com/xrun-dev/xrun/runner/profile"
	"github.com/xrun-dev/xrun/spec"
)

// preflightTimeout bounds the check of references on this machine.
const preflightTimeout = 10 * time.Second

// Preflight checks the spec's module:function references with this
// machine's python3 before anything is built: a misspelt function is
// found in a second rather than after the build and the container's start.
// The experiment's modules are parsed, not imported: none of its code runs
// here. Without a python3, or when the check cannot run, the container's
// check is the only one.
func Preflight(ctx context.Context, r SubmitRequest) error {
	py, err := exec.LookPath("python3")
	if err != nil {
		return nil
	}
	if _, err := harness.CheckOnHost(ctx, r.Prepared.Spec, r.Build.Dir, py, preflightTimeout); err != nil {
		// Here the spec is named as the command line named it
		// (x/exp/xrun.yaml:20), not as the container names it.
		msg := err.Error()
		if p := r.Prepared.Spec.Path; p != "" && p != spec.FileName {
			msg = strings.ReplaceAll("\n"+msg, "\n"+spec.FileName+":", "\n"+p+":")[1:]
		}
		return contract.BadInput(fmt.Errorf("%s\n(found before the build by this machine's python3, which parses the experiment's modules without running them; --no-preflight skips this check)", msg))
	}
	return nil
}

// Args are a submit as its command line asks for it.
type Args struct {
	// Dir is the experiment directory.
	Dir string
	// Where picks the Docker host, or with K8s the cluster.
	Where connect.Selection
	// Detach, Queue and Keep are SubmitRequest's.
	Detach, Queue, Keep bool
	// GPUs asks for GPUs (a count, device ids, all); CPU runs without.
	GPUs string
	CPU  bool
	// Env are NAME (read from this shell) or NAME=value, added to the
	// spec's env names.
	Env     []string
	Timeout time.Duration
	// CPUs replaces resources.cpus (a Docker host's CPUs for the job alone).
	CPUs int
	// Base replaces the base image that image.base resolves to.
	Base             string
	NoCache, Verbose bool
	// Labels are KEY=VALUE labels of the image and container.
	Labels []string
	// Root runs the job as root; Network is "default" or "none".
	Root    bool
	Network string
	// Profile asks the runner for Nsight Compute reports (runner/profile).
	Profile string
	// Retune has autotuned Triton kernels timed afresh (contract.EnvRetune).
	Retune bool
	// Registry and PullSecret are a Kubernetes cluster's (Where.K8s);
	// PendingLimit any cluster's (Where.Cluster).
	Registry, PullSecret string
	PendingLimit         time.Duration
	NoCacheVolume        bool
	NoStandby            bool
	// CacheLimit is the compile caches' size limit (go-units' sizes,
	// "10GiB"; "0": none; "": contract.DefaultCacheLimit).
	CacheLimit string
	// Post is where the runner posts results.json when this shell sets
	// no XRUN_POST_URL: the server of xrun's config.
	Post *PostTarget
}

// PostTarget is a results server for the runner: the URL it posts to and
// the bearer token it posts with.
type PostTarget struct {
	URL, Token string
}

// Request checks a submit's arguments, loads its spec and reads its
// environment from getenv (nil: the process's), before any connection or
// build: every mistake of the command line is found in a second, not
// after minutes of building. warn gets the spec's env names that are not
// set here (the job runs without them).
func Request(a Args, getenv func(string) string, warn io.Writer) (SubmitRequest, error) {
	var r SubmitRequest
	if a.Timeout < 0 {
		return r, contract.Usagef("--timeout %s: give a duration > 0 (or leave it out for resources.timeout)", a.Timeout)
	}
	labels, err := parseLabels(a.Labels)
	if err != nil {
		return r, err
	}
	so := build.Options{Dir: a.Dir, GPUs: a.GPUs, CPU: a.CPU, Timeout: a.Timeout, CPUs: a.CPUs, Base: a.Base, NoCache: a.NoCache, Verbose: a.Verbose, Labels: labels}
	if a.Profile != "" {
		if _, err := profile.Parse(a.Profile); err != nil {
			return r, contract.Usagef("--profile %q: %v", a.Profile, err)
		}
		if a.CPU {
			return r, contract.Usagef("--profile profiles GPU kernels: leave out --cpu")
		}
	}
	if a.CPU && a.GPUs != "" {
		return r, contract.Usagef("--cpu runs without GPUs: leave out --gpus %s (or --cpu)", a.GPUs)
	}
	if a.CPUs < 0 {
		return r, contract.Usagef("--cpus %d: give how many CPUs the job gets, at least 1", a.CPUs)
	}
	if a.PendingLimit < 0 {
		return r, contract.Usagef("--pending-limit %s: give a duration > 0", a.PendingLimit)
	}
	if err := connect.CheckSelection(a.Where); err != nil {
		return r, err
	}
	// What the place lacks is refused from its declaration, before the
	// build.
	caps := connect.Capabilities(a.Where)
	if err := caps.Refuse(a.asks()...); err != nil {
		return r, contract.BadInput(err)
	}
	if err := caps.Missing(a.gives); err != nil {
		return r, contract.BadInput(err)
	}
	p, err := build.Load(so)
	if err != nil {
		return r, err
	}
	if p.GPUs != nil && (len(p.GPUs.IDs) > 0 || p.GPUs.Count < 0) {
		if err := caps.Refuse(backend.GPUsByID); err != nil {
			return r, contract.BadInput(err)
		}
	}
	// --env is read before the connection and the build, which take minutes.
	env, err := jobEnv(p.Spec, a.Env, getenv, warn)
	if err != nil {
		return r, err
	}
	if a.Profile != "" {
		env = append(env, contract.EnvProfile+"="+a.Profile)
	}
	if a.Retune {
		env = append(env, contract.EnvRetune+"=1")
	}
	jo := build.JobOptions{Env: env, Root: a.Root, NoNetwork: a.Network == "none", CacheLimit: contract.DefaultCacheLimit}
	if a.CacheLimit != "" {
		if jo.CacheLimit, err = units.RAMInBytes(a.CacheLimit); err != nil || jo.CacheLimit < 0 {
			return r, contract.Usagef("--cache-limit %q: give a size (10GiB, 512MiB; 0 for none)", a.CacheLimit)
		}
	}
	// A URL set in this shell wins over the config's server, with this
	// shell's token alone: the config's token is for its own server.
	if _, hasURL := lookupEnv(getenv, contract.EnvPostURL); hasURL {
		jo.PostToken, _ = lookupEnv(getenv, contract.EnvPostToken)
	} else if a.Post != nil {
		jo.Env = append(jo.Env, contract.EnvPostURL+"="+a.Post.URL)
		jo.PostToken = a.Post.Token
		if t, ok := lookupEnv(getenv, contract.EnvPostToken); ok {
			jo.PostToken = t
		}
	}
	if a.Profile != "" && a.Root {
		// Nsight Compute reads the GPU's counters; where the driver lets
		// only administrators, root needs this capability too.
		jo.CapAdd = []string{profile.AdminCapability}
	}
	return SubmitRequest{
		Prepared: p, Build: so, Where: a.Where, Registry: a.Registry, PullSecret: a.PullSecret, PendingLimit: a.PendingLimit,
		Job: jo, Detach: a.Detach, Queue: a.Queue, Keep: a.Keep, Rerun: a.rerunArgs(), NoCacheVolume: a.NoCacheVolume, NoStandby: a.NoStandby,
	}, nil
}

// asks is what the command line asks of the place the job runs, among
// the features not every place gives (backend.Capabilities).
func (a Args) asks() []backend.Feature {
	var asked []backend.Feature
	if a.CPUs > 0 {
		asked = append(asked, backend.CPUReservation)
	}
	if a.Root {
		asked = append(asked, backend.RunAsRoot)
	}
	if a.Network == "none" {
		asked = append(asked, backend.NoNetwork)
	}
	if a.Base != "" {
		asked = append(asked, backend.BaseImage)
	}
	return asked
}

// gives reports whether the command line gives a setting a place may
// need before the build (backend.Capabilities.Needs).
func (a Args) gives(s backend.Setting) bool {
	switch s {
	case backend.Registry:
		return a.Registry != ""
	}
	return true
}

// rerunArgs are the arguments a rerun of the job repeats
// (store.SubmitArgs): the names of --env variables, never their values.
func (a Args) rerunArgs() *store.SubmitArgs {
	r := &store.SubmitArgs{Base: a.Base, CPUs: a.CPUs, Labels: a.Labels, Root: a.Root, Network: a.Network, NoStandby: a.NoStandby, NoCacheVolume: a.NoCacheVolume}
	r.Place = connect.PlaceOptions(a.Where)
	if a.Where.Cluster() {
		r.PendingLimit, r.Registry, r.PullSecret = a.PendingLimit, a.Registry, a.PullSecret
	}
	for _, e := range a.Env {
		name, _, _ := strings.Cut(e, "=")
		r.Env = append(r.Env, name)
	}
	return r
}

// jobEnv is the spec's env names and --env, read from this shell at submit
// time: values go to the container, never into the image.
func jobEnv(s *spec.Spec, flags []string, getenv func(string) string, warn io.Writer) ([]string, error) {
	var env []string
	for _, name := range s.Env {
		if v, ok := lookupEnv(getenv, name); ok {
			env = append(env, name+"="+v)
		} else {
			fmt.Fprintf(warn, "warning: %s lists env %s, which is not set here; the job runs without it\n", spec.FileName, name)
		}
	}
	for _, f := range flags {
		name, value, hasValue := strings.Cut(f, "=")
		if !envName.MatchString(name) {
			return nil, contract.Usagef("--env %q: give NAME or NAME=value, NAME of letters, digits and _ (not starting with a digit)", f)
		}
		if !hasValue {
			v, ok := lookupEnv(getenv, name)
			if !ok {
				return nil, contract.Usagef("--env %s: the variable is not set in this shell; set it or pass --env %s=value", name, name)
			}
			value = v
		}
		env = append(env, name+"="+value)
	}
	// The POST token is not among them: it goes to the runner alone
	// (backend.Spec.PostToken).
	if v, ok := lookupEnv(getenv, contract.EnvPostURL); ok {
		env = append(env, contract.EnvPostURL+"="+v)
	}
	return env, nil
}

// envName is a variable name a shell can set and a program can read.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func lookupEnv(getenv func(string) string, name string) (string, bool) {
	if getenv == nil {
		return os.LookupEnv(name)
	}
	v := getenv(name)
	return v, v != ""
}

func parseLabels(flags []string) (map[string]string, error) {
	labels := map[string]string{}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, contract.Usagef("--label %q: give KEY=VALUE", f)
		}
		if strings.HasPrefix(k, "dev.xrun.") && k != "dev.xrun.test" {
			return nil, contract.Usagef("--label %s: the dev.xrun. prefix is xrun's own", k)
		}
		labels[k] = v
	}
	return labels, nil
}
