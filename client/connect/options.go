package connect

import (
	"fmt"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/backend/kube"
	"github.com/xrun-dev/xrun/client/backend/slurm"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/table"
)

// The command line's options for the places beyond a Docker host are the
// backends' own (backend.Option): each backend declares its flags, their
// wording and what they set, and the catalog gathers them here, so that
// the command line lists them without naming a backend.

// HostOptions are the options that pick a cluster beside --host and
// --context, for every command that looks at jobs.
func (sel *Selection) HostOptions() []backend.Option {
	return kube.HostOptions(&sel.K8s, &sel.Kube)
}

// SubmitChoice is what a submit's command line says of a cluster beyond
// HostOptions: each cluster backend's options, bound here until Finish,
// and how long a cluster's job may wait for a node.
type SubmitChoice struct {
	Registry, PullSecret string
	PendingLimit         time.Duration
	slurm                slurm.Choice
}

// RegistryEnv is the environment variable that gives --registry: a
// rerun of a record that kept no registry reads it there.
const RegistryEnv = kube.RegistryEnv

// NewSubmitChoice is a submit's choice before its flags are read.
func NewSubmitChoice() *SubmitChoice { return &SubmitChoice{PendingLimit: PendingLimit} }

// Options are the flags of c, in the order submit's help lists them.
func (c *SubmitChoice) Options() []backend.Option {
	opts := append(kube.SubmitOptions(&c.Registry, &c.PullSecret), c.slurm.SubmitOptions()...)
	return append(opts, backend.Option{Name: "pending-limit", Env: []string{"XRUN_PENDING_LIMIT", "XRUN_SLURM_PENDING_LIMIT"},
		Usage:   "with " + clusterFlags() + ": how long a job with a timeout may wait for a node before the cluster drops it (sbatch --deadline; the Kubernetes Job's deadline)",
		Default: table.Duration(PendingLimit), Value: backend.DurationValue(&c.PendingLimit)})
}

// Finish puts what the flags said into sel, once they are read (isSet
// says which were given), with the defaults of a login node named in
// xrun's config, and refuses options of a place that was not picked.
func (c *SubmitChoice) Finish(s *Set, sel *Selection, isSet func(name string) bool) error {
	login, err := c.slurm.Login()
	if err != nil {
		return err
	}
	if c.slurm.Picked {
		sel.Slurm = &SlurmTarget{Login: login, Settings: s.SlurmDefaults(login, c.slurm.Settings)}
	} else if err := withoutPicker(c.slurm.SubmitOptions(), isSet); err != nil {
		return err
	}
	sel.MoveContextToKube()
	if isSet("pending-limit") && !sel.Cluster() {
		return contract.Usagef("--pending-limit goes with %s: a Docker host's job waits for its GPUs with --queue", clusterFlags())
	}
	return nil
}

// PruneChoice is what prune's command line says of a cluster beyond
// HostOptions, bound here until Finish.
type PruneChoice struct {
	Registry string
	slurm    slurm.Choice
}

// Options are the flags of c, in the order prune's help lists them.
func (c *PruneChoice) Options() []backend.Option {
	return append(c.slurm.PruneOptions(), kube.PruneOptions(&c.Registry)...)
}

// Finish puts what the flags said into sel, as SubmitChoice.Finish does.
func (c *PruneChoice) Finish(s *Set, sel *Selection, isSet func(name string) bool) error {
	login, err := c.slurm.Login()
	if err != nil {
		return err
	}
	if c.slurm.Picked {
		sel.Slurm = &SlurmTarget{Login: login, Settings: s.SlurmDefaults(login, slurm.Settings{Dir: c.slurm.Settings.Dir})}
	} else if err := withoutPicker(c.slurm.PruneOptions(), isSet); err != nil {
		return err
	}
	sel.MoveContextToKube()
	return CheckSelection(*sel)
}

// withoutPicker refuses the options of a place (the first of opts picks
// it) given without the option that picks it.
func withoutPicker(opts []backend.Option, isSet func(string) bool) error {
	var names []string
	given := false
	for _, o := range opts[1:] {
		names = append(names, "--"+o.Name)
		given = given || isSet(o.Name)
	}
	if !given {
		return nil
	}
	list := names[0]
	if n := len(names); n > 1 {
		list = strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	}
	verb := "goes"
	if len(names) > 1 {
		verb = "go"
	}
	return contract.Usagef("%s %s with --%s", list, verb, opts[0].Name)
}

// clusterFlags names the options that pick a cluster ("--slurm or --k8s").
func clusterFlags() string {
	return fmt.Sprintf("%s or %s", slurm.Flag, kube.Flag)
}

// SubmitHelp and PruneHelp are what each place beyond a Docker host says
// of itself in those commands' help; SubmitExamples and PruneExamples
// their lines of examples.
func SubmitHelp() string { return kube.SubmitHelp + "\n\n" + slurm.SubmitHelp }
func PruneHelp() string  { return kube.PruneHelp + "\n\n" + slurm.PruneHelp }

func SubmitExamples() []string { return []string{kube.SubmitExample, slurm.SubmitExample} }
func PruneExamples() []string  { return []string{kube.PruneExample, slurm.PruneExample} }
