package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/harness"
	"github.com/xrun-dev/xrun/runner/profile"
	"github.com/xrun-dev/xrun/spec"
)

// profileWait is how long ncu gets to write its report once the worker is
// told to exit: it replays every kernel it profiled before it returns.
const profileWait = 2 * time.Minute

// profiling is the Nsight Compute request of a run and what it needs.
type profiling struct {
	req *profile.Request
	// impls are the implementations it chose, in spec order.
	impls []string
	// ncu is the Nsight Compute to run, or ncuErr why there is none.
	ncu    string
	ncuErr error
}

// newProfiling reads Options.Profile and checks it against the spec and
// the run's cases; a request the run cannot honour is a spec error, before
// anything is timed. It returns nil when no profile is asked for.
func newProfiling(opt string, s *spec.Spec, cpu bool, logf func(string, ...any)) (*profiling, error) {
	req, err := profile.Parse(opt)
	if err != nil || req == nil {
		return nil, err
	}
	impls, err := req.Check(s.Benchmark.Implementations.Names(), len(s.Benchmark.Cases(cpu)))
	if err != nil {
		return nil, err
	}
	if len(impls) > 0 && impls[0] == referenceName && s.Benchmark.Reference == "" {
		return nil, fmt.Errorf("profile %s: the spec names no reference", req)
	}
	p := &profiling{req: req, impls: impls}
	if p.ncu, p.ncuErr = profile.Find(); p.ncuErr != nil && !cpu {
		// Said now, not after minutes of timing: the profile will fail.
		logf("profile (%s): %v; the implementations are checked and timed as usual", req, p.ncuErr)
	}
	return p, nil
}

// profileAll writes one Nsight Compute report per chosen implementation,
// each with one call of every chosen case it ran correctly or wrongly on,
// and records them (result.Profile). A failure is recorded, logged and
// warned about; it never fails the run.
func (rn *runner) profileAll(ctx context.Context) {
	r, pr := rn.rec.r, rn.prof
	rn.logf("profile (%s): %s", pr.req, strings.Join(pr.impls, ", "))
	for _, name := range pr.impls {
		im := rn.profileImpl(name)
		p := result.Profile{Implementation: name, Cases: []string{}, Status: result.ProfileFailed}
		var idx []int
		for i := range r.Cases {
			if !pr.req.WantsCase(i) {
				continue
			}
			if ir := r.Cases[i].Results[name]; name != referenceName && (ir == nil || (ir.Status != result.ImplOK && ir.Status != result.ImplWrong)) {
				continue // skipped, failed or not run here: no call to profile
			}
			idx = append(idx, i)
			p.Cases = append(p.Cases, r.Cases[i].Label)
		}
		switch {
		case rn.cpu:
			p.Error = "profiling needs a GPU; this run is on the CPU"
		case len(rn.s.Benchmark.Command) > 0:
			p.Error = "profiling runs implementations in the Python harness; a command benchmark is not profiled"
		case pr.ncuErr != nil:
			p.Error = pr.ncuErr.Error()
		case im == nil || im.skip != "":
			p.Error = "not run here"
		case len(idx) == 0:
			p.Error = "no case to profile: it ran on none of the chosen cases"
		default:
			rn.profileOne(ctx, pr.ncu, im, idx, &p)
		}
		if p.Status != result.ProfileOK {
			rn.logf("profile %s: %s", name, p.Error)
		} else {
			rn.logf("profile %s: %d kernels in %s (%s)", name, p.Kernels, p.Report, p.Summary)
		}
		r.Profiles = append(r.Profiles, p)
		rn.rec.write()
		if ctx.Err() != nil {
			return
		}
	}
}

// profileImpl returns the implementation called name, or a reference
// implementation when the reference is asked for.
func (rn *runner) profileImpl(name string) *impl {
	for _, im := range rn.impls {
		if im.name == name {
			return im
		}
	}
	if name == referenceName {
		return &impl{name: referenceName, isRef: true}
	}
	return nil
}

// profileOne runs im's worker under ncu for the cases idx and fills p.
func (rn *runner) profileOne(ctx context.Context, ncu string, im *impl, idx []int, p *result.Profile) {
	f := profile.FilesFor(im.name)
	out, err := filepath.Abs(rn.o.OutDir)
	if err == nil {
		err = os.MkdirAll(filepath.Join(out, profile.Dir), 0o755)
	}
	if err != nil {
		p.Error = fmt.Sprintf("create %s: %v", profile.Dir, err)
		return
	}
	// ncu runs as the worker user, who cannot write the output directory:
	// it writes into a scratch directory, whose files are then copied.
	ncuDir := out
	if rn.o.Worker != nil {
		if ncuDir, err = profileScratch(); err != nil {
			p.Error = fmt.Sprintf("create a directory for ncu's reports: %v", err)
			return
		}
		defer os.RemoveAll(ncuDir)
	}
	report := filepath.Join(ncuDir, f.Report)
	_ = os.Remove(report)
	b := &rn.s.Benchmark
	w, err := harness.Start(rn.pool.config(im.name, rn.prof.req.Argv(ncu, ncuDir, f, rn.pool.argv), ".profile.log"))
	if err != nil {
		p.Error = err.Error()
		return
	}
	base := harness.Init{Reference: b.Reference, Inputs: b.Inputs, Device: "cuda", Profile: true}
	octx, cancel := context.WithTimeout(ctx, max(rn.timeout, minInitTimeout))
	_, err = w.Init(octx, implInit(base, im))
	cancel()
	for _, i := range idx {
		if err != nil {
			break
		}
		c := rn.rec.r.Cases[i]
		var ps spec.Params
		ps, err = caseParams(rn.s, rn.cpu, i)
		if err != nil {
			break
		}
		octx, cancel := context.WithTimeout(ctx, rn.timeout)
		err = w.Profile(octx, harness.ProfileCmd{Params: harness.EncodeParams(ps), Seed: 1, Label: c.Label})
		cancel()
	}
	// ncu writes the report once the worker has exited.
	w.Close(profileWait)
	if ncuDir != out {
		for _, name := range []string{f.Log, f.Report} {
			if cerr := copyOut(filepath.Join(ncuDir, name), filepath.Join(out, name), maxReportBytes); cerr != nil && !errors.Is(cerr, os.ErrNotExist) {
				rn.logf("profile %s: %v", im.name, cerr)
			}
		}
	}
	log, _ := os.ReadFile(filepath.Join(out, f.Log))
	why := profile.Explain(string(log))
	switch {
	case err != nil && why != "":
		p.Error = why
	case err != nil:
		var he *harness.Error
		if errors.As(err, &he) && he.Tail != "" {
			p.Error = fmt.Sprintf("%v\n%s", err, lastBytes(he.Tail, 2000))
		} else {
			p.Error = err.Error()
		}
	case why != "":
		p.Error = why
	}
	if _, serr := os.Stat(filepath.Join(out, f.Report)); serr != nil {
		if p.Error == "" {
			p.Error = "ncu wrote no report (its messages are in " + f.Log + ")"
		}
		return
	}
	p.Report, p.Status = f.Report, result.ProfileOK
	if p.Error != "" {
		p.Status = result.ProfileFailed
	}
	sctx, cancel := context.WithTimeout(ctx, rn.timeout)
	defer cancel()
	argv := profile.SummaryArgv(ncu, report)
	cmd := exec.CommandContext(sctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	rn.o.Worker.Apply(cmd.SysProcAttr) // the report is the worker's file
	details, serr := cmd.Output()
	if serr != nil {
		rn.logf("profile %s: summary: %v", im.name, serr)
		return
	}
	if werr := os.WriteFile(filepath.Join(out, f.Summary), details, 0o644); werr == nil {
		p.Summary = f.Summary
	}
	p.Kernels = profile.CountKernels(string(details))
}

// maxReportBytes bounds one Nsight Compute file copied into the output.
const maxReportBytes = 1 << 30

// profileScratch makes a directory under contract.RunnerDir that the
// worker user may write ncu's files into (sticky, like /tmp).
func profileScratch() (string, error) {
	dir, err := os.MkdirTemp(contract.RunnerDir, "profile-")
	if err != nil {
		return "", err
	}
	sub := filepath.Join(dir, profile.Dir)
	if err := os.Mkdir(sub, 0o755); err != nil {
		return "", err
	}
	for _, d := range []string{dir, sub} {
		if err := os.Chmod(d, 0o1777); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// copyOut copies the regular file src, which the worker user wrote (so it
// may be a link to anything), to dst, refusing links and files over limit.
func copyOut(src, dst string, limit int64) error {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if fi.Size() > limit {
		return fmt.Errorf("%s is %d bytes, over the %d that are kept", src, fi.Size(), limit)
	}
	outF, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(outF, io.LimitReader(in, limit))
	if cerr := outF.Close(); err == nil {
		err = cerr
	}
	return err
}

// caseParams returns the parameters of case i, in spec order.
func caseParams(s *spec.Spec, cpu bool, i int) (spec.Params, error) {
	cases := s.Benchmark.Cases(cpu)
	if i < 0 || i >= len(cases) {
		return nil, fmt.Errorf("no case %d", i)
	}
	return cases[i], nil
}

// profileWarnings are the run's warnings about reports it could not make.
func profileWarnings(ps []result.Profile) []result.Warning {
	var out []result.Warning
	for _, p := range ps {
		if p.Status != result.ProfileOK {
			out = append(out, result.Warning{Kind: "profile_failed", Implementation: p.Implementation,
				Message: fmt.Sprintf("no Nsight Compute report for %s: %s", p.Implementation, text.OneLine(p.Error))})
		}
	}
	return out
}
