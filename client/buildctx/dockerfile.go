// Dockerfile generates the Dockerfile of an experiment's image.
//
// The layers go from what changes least to what changes most: the base,
// system packages, Python packages, the runner, then the experiment's code,
// so a code edit rebuilds only the last layer. The output uses only
// instructions that both the classic builder (Docker 20.10, API 1.41) and
// BuildKit understand: no heredocs, no RUN --mount, no syntax directive.

package buildctx

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/text"
)

// SkelDir is the build-context directory holding the empty out and runner
// directories, copied to /xrun owned by root, and JobSkelDir the empty home
// and tmp directories, copied there owned by the job user. The paths in
// the image are the container contract's (contract).
const (
	SkelDir    = "xrun-dirs"
	JobSkelDir = "xrun-job-dirs"
)

// DockerfileOptions describe the image.
type DockerfileOptions struct {
	// Base is the image reference to build on ("scratch" is allowed).
	Base string
	// Apt lists Debian/Ubuntu packages, installed in one layer.
	Apt []string
	// Python lists pip requirements, installed in one layer, in order.
	Python []string
	// RunnerSrc is the runner binary's path inside the build context
	// ("xrun-runner").
	RunnerSrc string
	// Experiment is the experiment's name, written in the header comment.
	Experiment string
	// Labels are set on the image, in key order.
	Labels map[string]string
}

var (
	aptRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+(:[a-z0-9-]+)?(=[A-Za-z0-9.+~:-]+)?$`)
	labelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)
)

// Dockerfile returns the Dockerfile for o. The same options always give the
// same bytes.
func Dockerfile(o DockerfileOptions) ([]byte, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if o.Experiment != "" {
		fmt.Fprintf(&b, "# Image of the xrun experiment %q; generated from its %s, edit that instead.\n", o.Experiment, "xrun.yaml")
	}
	fmt.Fprintf(&b, "FROM %s\n", o.Base)
	if apt := aptPackages(o.Apt); len(apt) > 0 {
		b.WriteString("RUN apt-get update \\\n")
		fmt.Fprintf(&b, " && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends %s \\\n", strings.Join(apt, " "))
		b.WriteString(" && rm -rf /var/lib/apt/lists/*\n")
	}
	if len(o.Python) > 0 {
		quoted := make([]string, len(o.Python))
		for i, r := range o.Python {
			quoted[i] = text.ShellQuote(r)
		}
		// PEP 668 bases (Debian 12, Ubuntu 24.04) refuse pip installs into
		// the system Python without PIP_BREAK_SYSTEM_PACKAGES; older pips
		// ignore it. A base without pip gets a message instead of a trace.
		b.WriteString("RUN python3 -m pip --version >/dev/null 2>&1 \\\n")
		b.WriteString(" || { echo 'xrun: the base image has no pip for python3; add python3-pip to image.apt or pick a base with pip' >&2; exit 1; } \\\n")
		b.WriteString(" && PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \\\n")
		fmt.Fprintf(&b, "    python3 -m pip install --no-cache-dir %s\n", strings.Join(quoted, " "))
	}
	fmt.Fprintf(&b, "ENV PYTHONUNBUFFERED=1 HOME=%s TMPDIR=%s\n", contract.HomeDir, contract.TmpDir)
	fmt.Fprintf(&b, "COPY %s %s\n", o.RunnerSrc, contract.RunnerPath)
	// The runner's directories belong to root; COPY --chown makes the
	// job's writable ones without needing a shell (or a user database) in
	// the base.
	fmt.Fprintf(&b, "COPY %s/ /xrun/\n", SkelDir)
	fmt.Fprintf(&b, "COPY --chown=%s %s/ /xrun/\n", contract.JobUser, JobSkelDir)
	// WORKDIR creates the directory without needing a shell in the base.
	fmt.Fprintf(&b, "WORKDIR %s\n", contract.ExperimentDir)
	fmt.Fprintf(&b, "ENTRYPOINT [%q, \"--experiment\", %q, \"--out\", %q]\n", contract.RunnerPath, contract.ExperimentDir, contract.OutDir)
	if len(o.Labels) > 0 {
		keys := make([]string, 0, len(o.Labels))
		for k := range o.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		// Labels go last: the spec hash changes when xrun.yaml does, and
		// then only this metadata step is redone.
		b.WriteString("LABEL")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(" \\\n     ")
			}
			fmt.Fprintf(&b, " %s=%s", k, labelQuote(o.Labels[k]))
		}
		b.WriteString("\n")
	}
	// The code is not in the image: xrun copies it into each job's
	// container, so a code edit needs no build.
	return b.Bytes(), nil
}

// SkelDirs are the build-context entries the generated Dockerfile copies to
// /xrun: the empty out and runner directories of SkelDir, the empty home,
// tmp and cache directories of JobSkelDir.
func SkelDirs() []Extra {
	var x []Extra
	for _, d := range []string{"out", "runner"} {
		x = append(x, Extra{Name: SkelDir + "/" + d, Dir: true})
	}
	for _, d := range []string{"home", "tmp", "cache"} {
		x = append(x, Extra{Name: JobSkelDir + "/" + d, Dir: true})
	}
	return x
}

func (o DockerfileOptions) check() error {
	if o.Base == "" {
		return fmt.Errorf("generate Dockerfile: no base image; set image.base in xrun.yaml or pass --base")
	}
	if strings.ContainsFunc(o.Base, isSpaceOrControl) {
		return fmt.Errorf("generate Dockerfile: base image %q contains white space; give a single image reference", o.Base)
	}
	if o.RunnerSrc == "" || strings.ContainsFunc(o.RunnerSrc, isSpaceOrControl) ||
		path.IsAbs(o.RunnerSrc) || path.Clean(o.RunnerSrc) != o.RunnerSrc || strings.HasPrefix(o.RunnerSrc, "..") {
		return fmt.Errorf("generate Dockerfile: runner path %q must be a clean relative path inside the build context without spaces", o.RunnerSrc)
	}
	if strings.ContainsFunc(o.Experiment, isControl) {
		return fmt.Errorf("generate Dockerfile: experiment name %q contains control characters", o.Experiment)
	}
	for _, p := range o.Apt {
		if !aptRE.MatchString(p) {
			return fmt.Errorf("generate Dockerfile: %q is not a Debian package name (lower case letters, digits, '+', '-', '.', optionally :arch and =version); fix image.apt", p)
		}
	}
	for _, r := range o.Python {
		if strings.TrimSpace(r) == "" || strings.ContainsFunc(r, isControl) {
			return fmt.Errorf("generate Dockerfile: pip requirement %q is empty or holds control characters; give one requirement per image.python entry", r)
		}
	}
	for k, v := range o.Labels {
		if !labelRE.MatchString(k) {
			return fmt.Errorf("generate Dockerfile: label key %q is not allowed; use letters, digits, '.', '_', '/' and '-'", k)
		}
		if strings.ContainsFunc(v, isControl) {
			return fmt.Errorf("generate Dockerfile: label %s has control characters in its value %q; remove them", k, v)
		}
	}
	return nil
}

// aptPackages returns the packages sorted and without duplicates: apt
// installs them together, so order does not matter and the layer's cache
// key should not depend on it.
func aptPackages(ps []string) []string {
	out := slices.Clone(ps)
	slices.Sort(out)
	return slices.Compact(out)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func isSpaceOrControl(r rune) bool { return r == ' ' || isControl(r) }

// labelQuote quotes a LABEL value: the builder unescapes \\, \" and \$ in
// double quotes and would otherwise expand $VARIABLES.
func labelQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`)
	return `"` + r.Replace(s) + `"`
}
