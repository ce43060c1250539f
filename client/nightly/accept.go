package nightly

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// Accept marks a change point at the run ref names (a job id or a
// results.json), for every series of the run that impl and cases (K=V)
// pick: the change it shows is accepted, and the series start a new
// baseline there.
func (n *History) Accept(jobs Jobs, ref, impl string, cases []string, note string) error {
	want, err := parseCases(cases)
	if err != nil {
		return err
	}
	h := n.h
	run, _, _, err := n.run(jobs, ref)
	if err != nil {
		return err
	}
	points, err := h.Points(history.Filter{Job: run.JobID, Implementation: impl, Case: want})
	if err != nil {
		return infra(err)
	}
	var ids []int64
	for _, p := range points {
		if p.RunID == run.ID {
			ids = append(ids, p.SeriesID)
		}
	}
	if len(ids) == 0 {
		return contract.Usagef("job %s has no timing that matches --impl %q and --case %v", run.JobID, impl, cases)
	}
	c, err := h.MarkChange(ids, run.At, run.JobID, note)
	if err != nil {
		return infra(err)
	}
	fmt.Fprintf(n.Out, "accepted: %d series of %s start a new baseline at job %s (%s)\n", c, run.Experiment, run.JobID, run.At.Format("2006-01-02 15:04 UTC"))
	return nil
}

// Changes lists the change points.
func (n *History) Changes() error {
	h := n.h
	changes, err := h.ChangePoints()
	if err != nil {
		return infra(err)
	}
	var ids []int64
	for id := range changes {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		fmt.Fprintln(n.Err, "no change points")
		return nil
	}
	points, err := h.Points(history.Filter{Series: ids})
	if err != nil {
		return infra(err)
	}
	for _, ser := range history.Series(points) {
		k := ser[0].Key
		for _, c := range changes[ser[0].SeriesID] {
			fmt.Fprintf(n.Out, "%s  series %d: %s · %s · %s  job %s  %s\n", c.At.Format("2006-01-02 15:04"), c.SeriesID,
				k.Experiment, k.Implementation, k.Case, c.JobID, c.Note)
		}
	}
	return nil
}

// Import adds the results.json files at paths (files, or directories
// searched for them) to the history, saying what it imported as it goes
// (asJSON: as JSON at the end). A file of a job of st (its results.json,
// or the runner's copy beside it) is imported only while the job's results
// match the digest recorded when it ended (store.CheckResults): a changed
// copy stops the import, exit 4. Once ctx
// is done (Ctrl-C) it stops: the runs imported so far stay, the one being
// imported is rolled back, and it says so and exits 130.
func (n *History) Import(ctx context.Context, st *store.Store, paths []string, asJSON bool) error {
	all := []history.Imported{}
	say := func(im history.Imported) {
		if asJSON {
			return
		}
		verb := "imported"
		if im.Replaced {
			verb = "replaced"
		}
		fmt.Fprintf(n.Out, "%s %s: %s, %d timings\n", verb, im.JobID, im.Experiment, im.Points)
	}
	for _, p := range paths {
		ims, err := n.h.ImportFile(ctx, p, func(f string) error { return checkStoreCopy(st, f) }, say)
		all = append(all, ims...)
		var te *store.TamperedError
		if errors.As(err, &te) {
			return infra(err)
		}
		if err != nil && ctx.Err() != nil {
			return &contract.ExitError{Code: contract.ExitCancelled, Err: fmt.Errorf("interrupted: %d run(s) imported before it stay in the results history; "+
				"the run being imported was rolled back, nothing of it was written (run the import again to add the rest)", len(all))}
		}
		if err != nil && history.IsStorage(err) {
			// A full disk is the machine's trouble, not the file's.
			return infra(fmt.Errorf("%w: %d run(s) imported before it stay; free space and import again", err, len(all)))
		}
		if err != nil {
			return contract.BadInput(err)
		}
	}
	if asJSON {
		return render.JSON(n.Out, all)
	}
	return nil
}

// checkStoreCopy checks the results of the job of st whose directory
// holds file (its results.json, or the runner's copy under out/) against
// the digest recorded when it ended (store.CheckResults); a file outside
// the store's jobs has nothing to check.
func checkStoreCopy(st *store.Store, file string) error {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil
	}
	for dir := filepath.Dir(abs); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		id := filepath.Base(dir)
		if !sameFile(dir, st.Dir(id)) {
			continue
		}
		j, err := st.Load(id)
		if err != nil {
			return nil
		}
		return st.CheckResults(j)
	}
	return nil
}

// sameFile reports whether a and b are one file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
