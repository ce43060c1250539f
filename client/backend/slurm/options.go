package slurm

import (
	"strings"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/contract"
)

// Flag is the option that picks a Slurm cluster.
const Flag = "--slurm"

// Choice is what a command line says of a Slurm cluster: whether it
// picked one (--slurm), the login nodes it named (one is right; a second
// is refused, not silently taken) and the settings.
type Choice struct {
	Picked   bool
	Logins   []string
	Settings Settings
}

// SubmitOptions are a submit's options of a Slurm cluster, bound to c.
func (c *Choice) SubmitOptions() []backend.Option {
	s := &c.Settings
	return []backend.Option{
		{Name: "slurm", Env: []string{"XRUN_SLURM"}, Usage: "run the job on a Slurm cluster with sbatch, without a container (docs/slurm.md): this machine's Slurm commands, or --login's", Switch: &c.Picked},
		{Name: "login", Env: []string{"XRUN_SLURM_LOGIN"}, Usage: "with --slurm: the cluster's login node, `[USER@]HOST[:PORT]`, reached with ssh (default: sbatch on this machine)", Value: backend.ListValue(&c.Logins)},
		{Name: "partition", Aliases: []string{"p"}, Env: []string{"XRUN_SLURM_PARTITION"}, Usage: "with --slurm: sbatch --partition", Value: backend.StringValue(&s.Partition)},
		{Name: "account", Env: []string{"XRUN_SLURM_ACCOUNT"}, Usage: "with --slurm: sbatch --account", Value: backend.StringValue(&s.Account)},
		{Name: "qos", Env: []string{"XRUN_SLURM_QOS"}, Usage: "with --slurm: sbatch --qos", Value: backend.StringValue(&s.QOS)},
		{Name: "constraint", Env: []string{"XRUN_SLURM_CONSTRAINT"}, Usage: "with --slurm: sbatch --constraint (node features)", Value: backend.StringValue(&s.Constraint)},
		{Name: "python", Env: []string{"XRUN_SLURM_PYTHON"}, Usage: "with --slurm: the Python on the nodes for the harness (a module's or a venv's python3)", Default: "the first python3 on the node's PATH that imports numpy", Value: backend.StringValue(&s.Python)},
		{Name: "slurm-dir", Env: []string{"XRUN_SLURM_DIR"}, Usage: "with --slurm: where the job directories go on the cluster's shared file system", Default: "~/.xrun/slurm", Value: backend.StringValue(&s.Dir)},
		{Name: "slurm-runtime", Env: []string{"XRUN_SLURM_RUNTIME"}, Usage: "with --slurm: bare (the runner as your process on the node, the cluster's Python) or docker (the job's image, built here and copied to the cluster, in the node's Docker)", Default: "bare", Value: backend.StringValue(&s.Runtime)},
		{Name: "sbatch", Usage: "with --slurm: one more sbatch `OPTION` for the job, as --exclusive, --nodelist=n1,n2 or --comment=nightly (repeat it for more; after the config's slurm: sbatch: list)", Value: backend.ListValue(&s.Sbatch)},
	}
}

// PruneOptions are prune's options of a Slurm cluster, bound to c.
func (c *Choice) PruneOptions() []backend.Option {
	return []backend.Option{
		{Name: "slurm", Usage: "prune the job images that the Slurm docker runtime keeps on the cluster (in the job directory's images/) instead", Switch: &c.Picked},
		{Name: "login", Env: []string{"XRUN_SLURM_LOGIN"}, Usage: "with --slurm: the cluster's login node, `[USER@]HOST[:PORT]` or a host named in xrun's config (default: this machine's Slurm)", Value: backend.ListValue(&c.Logins)},
		{Name: "slurm-dir", Env: []string{"XRUN_SLURM_DIR"}, Usage: "with --slurm: the job directories on the cluster's shared file system, as given to submit", Default: "~/.xrun/slurm", Value: backend.StringValue(&c.Settings.Dir)},
	}
}

// Login is the one login node c names ("": this machine's Slurm
// commands), or a usage error for more than one.
func (c *Choice) Login() (string, error) {
	switch len(c.Logins) {
	case 0:
		return "", nil
	case 1:
		return c.Logins[0], nil
	}
	return "", contract.Usagef("--login is given %d times (%s): give the one login node of the cluster", len(c.Logins), strings.Join(c.Logins, ", "))
}

// SubmitHelp is what submit's help says of a Slurm cluster.
const SubmitHelp = `With --slurm the job is a Slurm batch job, without a container: the static
runner and the code go to a job directory on the cluster's shared file system
(--slurm-dir), the runner uses the nodes' Python (--python), and sbatch gets
--gres from the GPUs asked for, --time from the timeout, --partition, --account,
--qos and --constraint as given, and any other option with --sbatch (--sbatch
--exclusive --sbatch --nodelist=n1,n2; a login node's slurm: sbatch: list in
xrun's config gives them to every job). The Slurm commands run on this machine, or on
--login over ssh. A job that waits for a node is "pending" with the scheduler's
reason. With --slurm-runtime docker the job's image is built here (--base as on
a Docker host), copied to the cluster once per image, and the batch job runs it
in the node's Docker as a Docker host runs it. See docs/slurm.md.`

// PruneHelp is what prune's help says of a Slurm cluster.
const PruneHelp = `With --slurm it prunes the job images that the Slurm docker runtime keeps on
the cluster (--login, --slurm-dir, as given to submit): the images in the job
directories' images/ that no job that has not ended loads, copied or last used
by a submit more than --older-than ago, each with the layers no other image
shares, and the copies a killed submit left half-written. The next submit of
that image copies it again.`

// SubmitExample and PruneExample are a line of each command's examples.
const (
	SubmitExample = "xrun submit --slurm --login me@login.hpc.edu --partition gpu --python ~/venv/bin/python3 -d my-kernel"
	PruneExample  = "xrun prune --slurm --login hpc --older-than 24h"
)
