package job

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/result"
)

// The end of a job records the SHA-256 of the store's results.json; from
// then on a changed container is never read again, and a changed or
// missing store copy is refused, naming the job and the copy.
func TestEndRecordsResultsDigest(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	files := map[string]string{"results.json": enginetest.ResultsJSON("my-kernel", result.StatusSucceeded)}
	e.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Exit: 0, Files: files} }
	j, err := e.submit(context.Background(), t, dir, Args{CPU: true, Keep: true})
	if err != nil {
		t.Fatalf("submit: %v: %s", err, e.err)
	}
	st := e.m.Store
	rec, err := st.Load(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(st.Results(j.ID))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if rec.ResultsSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("the record's digest %q is not the store copy's %x", rec.ResultsSHA256, sum)
	}
	if err := st.CheckResults(rec); err != nil {
		t.Fatalf("the untouched copy: %v", err)
	}

	// The container's results.json replaced, the store's copy gone: the
	// container is not read again.
	files["results.json"] = enginetest.ResultsJSON("forged-kernel", result.StatusSucceeded)
	if err := os.Remove(st.Results(j.ID)); err != nil {
		t.Fatal(err)
	}
	err = e.m.EnsureResults(context.Background(), rec)
	var te *store.TamperedError
	if !errors.As(err, &te) || !te.Missing || !strings.Contains(err.Error(), "the results of job "+j.ID+" were removed after the job ended") || !strings.Contains(err.Error(), st.Results(j.ID)) {
		t.Fatalf("EnsureResults with the copy gone: %v", err)
	}
	if st.Has(j.ID, store.ResultsFile) {
		got, _ := os.ReadFile(st.Results(j.ID))
		t.Fatalf("the results were collected again from the changed container:\n%s", got)
	}

	// The store's copy changed.
	if err := os.WriteFile(st.Results(j.ID), []byte(files["results.json"]), 0o644); err != nil {
		t.Fatal(err)
	}
	err = st.CheckResults(rec)
	if !errors.As(err, &te) || te.Missing || err.Error() != "the results of job "+j.ID+" were changed after the job ended: the recorded copy, "+st.Results(j.ID)+", no longer matches the SHA-256 its record (job.json) kept when xrun collected it; restore the file from a backup of the job store" {
		t.Fatalf("CheckResults of a changed copy: %v", err)
	}

	// A record from before digests has nothing to check.
	rec.ResultsSHA256 = ""
	if err := st.CheckResults(rec); err != nil {
		t.Fatalf("a record without a digest: %v", err)
	}
}
