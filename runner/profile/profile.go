// Package profile is the runner's side of profiling a job with Nsight
// Compute: which implementations and cases XRUN_PROFILE (or --profile)
// asks for, the ncu command line that runs a worker under it, and what
// ncu's log says went wrong.
//
// After the timed cases, the runner starts one worker per chosen
// implementation under
//
//	ncu --profile-from-start off --nvtx --target-processes all --clock-control none
//	    [--set SET] --log-file profile/IMPL.ncu.log -f -o profile/IMPL python3 -u harness.py
//
// and asks it for one call of each chosen case (an untimed call first, so
// that compilation stays out of the report, then one call between
// cudaProfilerStart and cudaProfilerStop inside the NVTX range "xrun
// LABEL"). The report and its details page as text land in the output
// directory, which the client copies back with the results.
package profile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/xrun-dev/xrun/result"
)

// ToolNcu is the one profiler the runner drives.
const ToolNcu = "ncu"

// Dir is the folder of the output directory that holds the reports.
const Dir = "profile"

// Request is a parsed XRUN_PROFILE:
//
//	ncu                         every implementation, every case
//	ncu:impl=a,b;case=0,2       implementations a and b, cases 0 and 2
//	ncu:set=full;clock=base     ncu's "full" section set, clocks locked to base
//
// Keys: impl (implementation names, "reference" for the reference), case
// (0-based case indexes in sweep order, or "all"), set (an ncu section set,
// passed to --set; ncu's default when absent), clock ("none", the default:
// the GPU's clocks as found, as the runner times them; or "base": ncu
// locks them to base while it profiles).
type Request struct {
	Impls []string // nil: every implementation the spec names
	Cases []int    // nil: every case
	Set   string
	Clock string
}

var (
	nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	setRE  = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

// Parse reads XRUN_PROFILE. An empty value (or "off") asks for nothing:
// it returns nil.
func Parse(s string) (*Request, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "off" {
		return nil, nil
	}
	tool, opts, _ := strings.Cut(s, ":")
	if tool != ToolNcu {
		return nil, fmt.Errorf("profile %q: the profiler must be %q (as in ncu or ncu:impl=a,b;case=0)", s, ToolNcu)
	}
	r := &Request{Clock: "none"}
	seen := map[string]bool{}
	for _, kv := range strings.Split(opts, ";") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || v == "" {
			return nil, fmt.Errorf("profile %q: %q is not key=value (keys: impl, case, set, clock)", s, kv)
		}
		if seen[k] {
			return nil, fmt.Errorf("profile %q: %s given twice", s, k)
		}
		seen[k] = true
		switch k {
		case "impl":
			for _, n := range strings.Split(v, ",") {
				n = strings.TrimSpace(n)
				if !nameRE.MatchString(n) {
					return nil, fmt.Errorf("profile %q: implementation %q is not a name", s, n)
				}
				if !slices.Contains(r.Impls, n) {
					r.Impls = append(r.Impls, n)
				}
			}
		case "case":
			if v == "all" {
				continue
			}
			for _, c := range strings.Split(v, ",") {
				i, err := strconv.Atoi(strings.TrimSpace(c))
				if err != nil || i < 0 {
					return nil, fmt.Errorf("profile %q: case %q is not a case index (0, 1, ... in sweep order) or all", s, c)
				}
				if !slices.Contains(r.Cases, i) {
					r.Cases = append(r.Cases, i)
				}
			}
		case "set":
			if !setRE.MatchString(v) {
				return nil, fmt.Errorf("profile %q: set %q is not an ncu section set name (ncu --list-sets)", s, v)
			}
			r.Set = v
		case "clock":
			if v != "none" && v != "base" {
				return nil, fmt.Errorf("profile %q: clock must be none or base", s)
			}
			r.Clock = v
		default:
			return nil, fmt.Errorf("profile %q: unknown key %q (keys: impl, case, set, clock)", s, k)
		}
	}
	return r, nil
}

// String renders r in the syntax Parse reads.
func (r *Request) String() string {
	var kv []string
	if len(r.Impls) > 0 {
		kv = append(kv, "impl="+strings.Join(r.Impls, ","))
	}
	if len(r.Cases) > 0 {
		cs := make([]string, len(r.Cases))
		for i, c := range r.Cases {
			cs[i] = strconv.Itoa(c)
		}
		kv = append(kv, "case="+strings.Join(cs, ","))
	}
	if r.Set != "" {
		kv = append(kv, "set="+r.Set)
	}
	if r.Clock != "" && r.Clock != "none" {
		kv = append(kv, "clock="+r.Clock)
	}
	if len(kv) == 0 {
		return ToolNcu
	}
	return ToolNcu + ":" + strings.Join(kv, ";")
}

// Check matches r against what the run has: the spec's implementations (in
// order; the reference may be named too) and the number of cases. It
// returns the implementations to profile, in spec order.
func (r *Request) Check(impls []string, cases int) ([]string, error) {
	for _, c := range r.Cases {
		if c >= cases {
			return nil, fmt.Errorf("profile %s: no case %d (this run has %d, numbered from 0)", r, c, cases)
		}
	}
	if len(r.Impls) == 0 {
		return slices.Clone(impls), nil
	}
	var out []string
	for _, n := range r.Impls {
		if n != result.Reference && !slices.Contains(impls, n) {
			return nil, fmt.Errorf("profile %s: no implementation %q (the spec has %s, and the reference)", r, n, strings.Join(impls, ", "))
		}
	}
	if slices.Contains(r.Impls, result.Reference) {
		out = append(out, result.Reference)
	}
	for _, n := range impls {
		if slices.Contains(r.Impls, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// WantsCase says whether case i (0-based) is to be profiled.
func (r *Request) WantsCase(i int) bool {
	return len(r.Cases) == 0 || slices.Contains(r.Cases, i)
}

// Files are the paths of one implementation's report, relative to the
// output directory.
type Files struct {
	Report  string // the .ncu-rep file
	Summary string // its details page as text
	Log     string // ncu's own messages
}

// FilesFor names an implementation's files (its name made safe for a file
// name).
func FilesFor(impl string) Files {
	base := filepath.Join(Dir, safeName(impl))
	return Files{Report: base + ".ncu-rep", Summary: base + ".txt", Log: base + ".ncu.log"}
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func safeName(s string) string { return unsafe.ReplaceAllString(s, "_") }

// Argv is the command line that runs worker (python3 -u harness.py) under
// ncu, writing into outDir (absolute).
func (r *Request) Argv(ncu, outDir string, f Files, worker []string) []string {
	argv := []string{ncu, "--profile-from-start", "off", "--nvtx", "--target-processes", "all",
		"--clock-control", r.Clock}
	if r.Set != "" {
		argv = append(argv, "--set", r.Set)
	}
	argv = append(argv, "--log-file", filepath.Join(outDir, f.Log), "-f",
		"-o", strings.TrimSuffix(filepath.Join(outDir, f.Report), ".ncu-rep"))
	return append(argv, worker...)
}

// SummaryArgv prints a report's details page (to be saved as Files.Summary).
func SummaryArgv(ncu, report string) []string {
	return []string{ncu, "--import", report, "--page", "details", "--print-units", "auto"}
}

// ErrNoNcu says the image has no Nsight Compute.
var ErrNoNcu = errors.New("Nsight Compute (ncu) is not on PATH, in /usr/local/cuda/bin or in /opt/nvidia/nsight-compute: " +
	"the job's image needs it (NVIDIA's CUDA apt repository packages it as cuda-nsight-compute-<version>, such as cuda-nsight-compute-13-0)")

// Find returns the ncu to run: the first on PATH, else the CUDA toolkit's,
// else the newest under /opt/nvidia/nsight-compute.
func Find() (string, error) {
	if p, err := exec.LookPath("ncu"); err == nil {
		return p, nil
	}
	if p := "/usr/local/cuda/bin/ncu"; isExec(p) {
		return p, nil
	}
	ms, _ := filepath.Glob("/opt/nvidia/nsight-compute/*/ncu")
	slices.Sort(ms)
	for i := len(ms) - 1; i >= 0; i-- {
		if isExec(ms[i]) {
			return ms[i], nil
		}
	}
	return "", ErrNoNcu
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// AdminCapability is the capability a job run as root needs to read the
// GPU's performance counters where the driver lets only administrators
// (xrun submit --profile --root adds it).
const AdminCapability = "SYS_ADMIN"

// PermissionHelp is what to do about ERR_NVGPUCTRPERM.
const PermissionHelp = "Nsight Compute may not read this GPU's performance counters (ERR_NVGPUCTRPERM): the host's NVIDIA " +
	"driver lets only administrators profile. Either allow everyone on the host (a file in /etc/modprobe.d with " +
	"\"options nvidia NVreg_RestrictProfilingToAdminUsers=0\", then reload the driver or reboot), or run the job " +
	"as root with the " + AdminCapability + " capability (xrun submit --profile ... --root does); " +
	"see https://developer.nvidia.com/ERR_NVGPUCTRPERM"

// Explain reads ncu's log (Files.Log) for why a profile failed: the
// permission error with what to do about it, a run that profiled no
// kernel, or ncu's own ==ERROR== lines. It returns "" when the log shows
// no error.
func Explain(log string) string {
	if strings.Contains(log, "ERR_NVGPUCTRPERM") {
		return PermissionHelp
	}
	var errs []string
	for _, line := range strings.Split(log, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "==ERROR==") {
			errs = append(errs, strings.TrimSpace(line))
		}
	}
	if len(errs) > 0 {
		return "ncu: " + strings.Join(errs, "; ")
	}
	if strings.Contains(log, "No kernels were profiled") {
		return "ncu profiled no kernel: the call launched none on the GPU"
	}
	return ""
}

var kernelRE = regexp.MustCompile(`(?m), Context \d+, Stream \d+, Device \d+, CC \d+\.\d+\s*$`)

// CountKernels counts the kernel launches in a details page.
func CountKernels(details string) int {
	return len(kernelRE.FindAllStringIndex(details, -1))
}
