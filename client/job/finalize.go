package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/result"
)

// finalize records how a job whose runner exited ended, and copies its
// output and logs into the store. Nothing is final until they are there:
// a copy that fails (a full disk, a lost connection) leaves the record as
// it was, for the next look to try again, and is returned. An output over
// MaxOutputBytes fails the job.
func (m *Manager) finalize(ctx context.Context, b backend.Backend, j *store.Job, s backend.State) error {
	st := m.Store
	fetchErr := FetchOutputs(ctx, b, st, j)
	// A job that ended before its runner started has no log and no output:
	// there is nothing to fetch, and its end is recorded all the same.
	notStarted := errors.Is(fetchErr, backend.ErrNotStarted)
	if notStarted {
		fetchErr = nil
	}
	// A runner that wrote no output: the job ends without results, and a
	// stopped one says why it kept none (a pod deleted with its log).
	var noOutput error
	if errors.Is(fetchErr, backend.ErrNotFound) {
		noOutput, fetchErr = fetchErr, nil
	}
	if fetchErr != nil && !errors.Is(fetchErr, ErrOutputTooLarge) {
		return fetchErr
	}
	code := s.ExitCode
	j.ExitCode = &code
	t := time.Now().UTC()
	if !s.FinishedAt.IsZero() {
		t = s.FinishedAt.UTC()
	}
	j.Finished = &t
	switch {
	case s.NoNode && j.StoppedBy == "":
		// One story on every place: it never ran, and the place says why.
		j.StoppedBy, j.Error = result.StatusTimeout, s.Message
	case s.TimedOut && j.StoppedBy == "":
		j.StoppedBy, j.Error = result.StatusTimeout, timeoutMessage(j)
	}
	out := Ending{ExitCode: code, OOMKilled: s.OOMKilled, StoppedBy: j.StoppedBy, Fetched: true}
	resPath := st.Results(j.ID)
	r, err := result.ReadFile(resPath)
	if err == nil {
		out.Results = r.Status
	} else {
		r = nil
	}
	j.Status = FinalStatus(out)
	j.OOMKilled = s.OOMKilled
	stopped := j.StoppedBy != "" && j.Status == j.StoppedBy
	// A runner that reached its verdict accounts for its workers, one
	// killed for memory among them; one that did not died with the job.
	verdict := r != nil && r.Status != result.StatusRunning
	switch {
	case fetchErr != nil:
		j.Status, j.Error = result.StatusFailed, fetchErr.Error()
	case stopped && notStarted && j.Error == "":
		j.Error = notStartedMessage(j.Status)
	case stopped:
		// the stopper's reason (expire, cancel) stays
	case verdict && r.Status == result.StatusCancelled && j.StoppedBy == "":
		j.Error = connect.CapabilitiesOf(j).StoppedOutside()
	case verdict && r.Error != "":
		j.Error = r.Error
	case verdict && j.Status == result.StatusFailed:
		j.Error = FailureSentence(r)
	case s.OOMKilled:
		j.Error = OOMMessage(s.MemoryBytes)
	case j.Status == result.StatusCancelled && j.StoppedBy == "":
		j.Error = connect.CapabilitiesOf(j).StoppedOutside()
	case r == nil && j.Status == result.StatusFailed && (code == 0 || code == 1):
		j.Error = fmt.Sprintf("the runner exited with code %d but left no %s: its output directory was lost or could not be written (see `xrun logs %s`)", code, result.FileName, j.ID)
	case j.Status == result.StatusFailed && s.Message != "":
		j.Error = s.Message
	case notStarted && j.Status == result.StatusFailed:
		j.Error = notStartedMessage(j.Status)
	case r != nil && !verdict && j.Status == result.StatusFailed:
		j.Error = fmt.Sprintf("the runner died before its verdict (exit code %d): see `xrun logs %s`", code, j.ID)
	}
	if r == nil && noOutput != nil && (j.Status == result.StatusCancelled || j.Status == result.StatusTimeout) {
		j.Error = strings.TrimSuffix(j.Error, ".") + "; no partial results were kept: " + withoutSentinel(noOutput)
	}
	// The runner knows only that it got SIGTERM: a job stopped for its
	// timeout carries the stopper's reason, not the runner's "cancelled".
	stopReason := stopped && j.Error != "" && r != nil && r.Error != j.Error
	if r != nil && (r.Status != j.Status || stopReason) {
		// The store's results.json says what the record says (a runner
		// stopped for its timeout wrote cancelled, one that died wrote
		// running); out/ keeps the runner's own copy.
		analyze.Conclude(r, analyze.Conclusion{Status: j.Status, Reason: j.Error, Finished: verdict, StoppedFor: stopReason})
		if err := result.WriteFile(resPath, r); err != nil {
			return fmt.Errorf("record the status of job %s in its results: %w", j.ID, err)
		}
	}
	// From here on the store's copy is the job's results: the digest
	// recorded with the end shows any change made to it later, and the
	// job's container, which any user of its host can change, is not
	// read again.
	j.ResultsSHA256 = ""
	if fetchErr == nil {
		if d, err := st.ResultsDigest(j.ID); err == nil {
			j.ResultsSHA256 = d
		}
	}
	if err := st.Save(j); err != nil {
		return err
	}
	// What the job held on its host (GPUs, CPUs) is free once its end is
	// recorded, by whichever command recorded it: a detached job's
	// submitter is gone, and an attached one frees them again, harmlessly.
	if rl, ok := b.(backend.Releaser); ok {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backend.CleanupTimeout)
		if err := rl.Release(rctx, j); err != nil {
			fmt.Fprintf(m.Err, "warning: job %s: %v (the next submit to the host frees them)\n", j.ID, err)
		}
		cancel()
	}
	if m.Finished != nil {
		m.Finished(j)
	}
	return nil
}

// withoutSentinel is err's sentence without the backend.ErrNotFound it
// wraps: the backend's reason is the news, "not found" is not.
func withoutSentinel(err error) string {
	msg := err.Error()
	for _, tail := range []string{": " + backend.ErrNotFound.Error(), " (" + backend.ErrNotFound.Error() + ")"} {
		msg = strings.TrimSuffix(msg, tail)
	}
	return msg
}
