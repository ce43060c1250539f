package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCreateConcurrentIDsAreUnique(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := &Job{Experiment: "x", Status: StatusCreated}
			if err := s.Create(j); err != nil {
				t.Error(err)
			}
			ids[i] = j.ID
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		if len(id) != 12 || seen[id] {
			t.Fatalf("id %q is short or repeated", id)
		}
		seen[id] = true
	}
	list, err := s.List()
	if err != nil || len(list) != n {
		t.Fatalf("List = %d jobs, %v", len(list), err)
	}
}

func TestCreateRetriesATakenID(t *testing.T) {
	s, _ := Open(t.TempDir())
	a := &Job{ID: "aaaaaaaaaaaa"}
	if err := s.Create(a); err != nil {
		t.Fatal(err)
	}
	b := &Job{ID: "aaaaaaaaaaaa"}
	if err := s.Create(b); err != nil {
		t.Fatal(err)
	}
	if b.ID == a.ID {
		t.Fatal("a taken id was reused")
	}
}

func TestResolve(t *testing.T) {
	s, _ := Open(t.TempDir())
	for _, id := range []string{"3fa1c2000001", "3fa1c2000002", "77b000000000"} {
		if err := s.Create(&Job{ID: id, Experiment: "e"}); err != nil {
			t.Fatal(err)
		}
	}
	// A directory without a record is not a job.
	os.Mkdir(filepath.Join(s.Root, "3fa1zzzz"), 0o755)
	tests := []struct {
		ref, want, errHas string
		ambiguous         bool
	}{
		{ref: "77b000000000", want: "77b000000000"},
		{ref: "77", want: "77b000000000"},
		{ref: "3fa1c2000002", want: "3fa1c2000002"},
		{ref: "3fa1", errHas: "matches 2 jobs (3fa1c2000001, 3fa1c2000002)", ambiguous: true},
		{ref: "ffff", errHas: `no job "ffff": known jobs are 3fa1c2000001, 3fa1c2000002, 77b000000000`},
		{ref: "", errHas: "no job id given"},
		{ref: "  ", errHas: "no job id given"},
		{ref: "../x", errHas: `no job "../x": a job id is 12 hex digits`},
	}
	for _, tt := range tests {
		j, err := s.Resolve(tt.ref)
		if tt.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("Resolve(%q) err = %v, want %q", tt.ref, err, tt.errHas)
			}
			var ae *AmbiguousError
			if errors.As(err, &ae) != tt.ambiguous {
				t.Errorf("Resolve(%q): ambiguous = %v", tt.ref, !tt.ambiguous)
			}
			continue
		}
		if err != nil || j.ID != tt.want {
			t.Errorf("Resolve(%q) = %v, %v; want %s", tt.ref, j, err, tt.want)
		}
	}
}

func TestNotFoundInEmptyStoreSaysHowToStart(t *testing.T) {
	s, _ := Open(t.TempDir())
	_, err := s.Resolve("abc")
	if err == nil || !strings.Contains(err.Error(), "xrun submit") {
		t.Fatalf("err = %v", err)
	}
}

func TestSaveRoundTripAndListOrder(t *testing.T) {
	s, _ := Open(t.TempDir())
	old := &Job{Experiment: "old", Created: time.Now().Add(-time.Hour).UTC()}
	newer := &Job{Experiment: "new"}
	if err := s.Create(old); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(newer); err != nil {
		t.Fatal(err)
	}
	code := 2
	newer.Status, newer.ExitCode = "failed", &code
	if err := s.Save(newer); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(newer.ID)
	if err != nil || got.Status != "failed" || got.ExitCode == nil || *got.ExitCode != 2 {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	list, _ := s.List()
	if len(list) != 2 || list[0].Experiment != "new" || list[1].Experiment != "old" {
		t.Errorf("List order: %v, %v", list[0].Experiment, list[1].Experiment)
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(s.Dir(newer.ID))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left %s behind", e.Name())
		}
	}
	if err := s.WriteFile(newer.ID, ResultsFile, []byte("{}")); err != nil || !s.Has(newer.ID, ResultsFile) {
		t.Fatalf("WriteFile: %v", err)
	}
	if err := s.Remove(newer.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(newer.ID); err == nil {
		t.Error("job still there after Remove")
	}
}

func TestDefaultRootHonoursXDG(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/data")
	if r, _ := DefaultRoot(); r != "/data/xrun/jobs" {
		t.Errorf("root = %s", r)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/u")
	if r, _ := DefaultRoot(); r != "/home/u/.local/share/xrun/jobs" {
		t.Errorf("root = %s", r)
	}
}

// A record cut short is listed as unreadable, naming its file, and
// resolving it says the same.
func TestTruncatedRecord(t *testing.T) {
	s, _ := Open(t.TempDir())
	good, bad := &Job{Experiment: "e", Status: StatusRunning}, &Job{Experiment: "e", Status: StatusRunning}
	for _, j := range []*Job{good, bad} {
		if err := s.Create(j); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(s.Dir(bad.ID), RecordFile)
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := s.Entries()
	if err != nil || len(entries) != 2 {
		t.Fatalf("Entries = %d, %v", len(entries), err)
	}
	for _, e := range entries {
		switch e.ID {
		case good.ID:
			if e.Err != nil || e.Job.Status != StatusRunning {
				t.Errorf("the good record: %+v", e)
			}
		case bad.ID:
			if e.Job != nil || e.Err == nil || !strings.Contains(e.Err.Error(), path) || !strings.Contains(e.Err.Error(), "xrun rm -f "+bad.ID) {
				t.Errorf("the cut record: %+v", e)
			}
		}
	}
	if list, err := s.List(); err != nil || len(list) != 1 || list[0].ID != good.ID {
		t.Errorf("List = %v, %v; want the readable record alone", list, err)
	}
	_, err = s.Resolve(bad.ID[:6])
	var re *RecordError
	if !errors.As(err, &re) || re.Path != path {
		t.Errorf("Resolve = %v, want a RecordError for %s", err, path)
	}
}

// Adopt keeps the job's own id, returns the record already there for an
// id the store has, and refuses what cannot be an id.
func TestAdopt(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.Adopt(&Job{ID: "0123456789ab", Host: "ssh://lab", Status: StatusRunning})
	if err != nil || j.ID != "0123456789ab" {
		t.Fatalf("Adopt = %+v, %v", j, err)
	}
	got, err := s.Resolve("0123")
	if err != nil || got.Host != "ssh://lab" || got.Status != StatusRunning {
		t.Errorf("Resolve after Adopt = %+v, %v", got, err)
	}
	again, err := s.Adopt(&Job{ID: "0123456789ab", Host: "elsewhere"})
	if err != nil || again.Host != "ssh://lab" {
		t.Errorf("a second Adopt replaced the record: %+v, %v", again, err)
	}
	for _, id := range []string{"", "../x", ".hidden"} {
		if _, err := s.Adopt(&Job{ID: id}); err == nil {
			t.Errorf("Adopt(%q) succeeded", id)
		}
	}
}

func TestCreator(t *testing.T) {
	me := Creator()
	if me == "" {
		t.Fatal("Creator() is empty: it reads /proc")
	}
	if CreatorGone(me) {
		t.Errorf("this process (%s) is taken for gone", me)
	}
	if CreatorPID(me) != os.Getpid() {
		t.Errorf("CreatorPID(%s) = %d", me, CreatorPID(me))
	}
	parts := strings.Split(me, ":")
	for _, gone := range []string{
		"another-boot:" + parts[1] + ":" + parts[2],
		parts[0] + ":" + parts[1] + ":1",    // the pid, started at another time
		parts[0] + ":999999999:" + parts[2], // no such pid
	} {
		if !CreatorGone(gone) {
			t.Errorf("%s is taken for alive", gone)
		}
	}
	if CreatorGone("") || CreatorGone("nonsense") {
		t.Error("an unknown submitter must not be taken for gone")
	}
}

// An unknown id among many names the five closest and points to ps --all.
func TestNotFoundNamesClosest(t *testing.T) {
	var known []string
	for i := range 40 {
		known = append(known, fmt.Sprintf("%02x%010d", i*6, i))
	}
	e := &NotFoundError{Ref: "3cz", Known: known}
	want := `no job "3cz": closest are 3c0000000010, 300000000008, 360000000009, 0c0000000002, 6c0000000018 (` + "`xrun ps --all`" + ` lists all 40)`
	if got := e.Error(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// ReadResults gives the copy it checked: the bytes the digest recorded
// when the job ended, else a *TamperedError (changed or missing); a job
// with no copy and no digest has no results yet.
func TestReadResults(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j := &Job{ID: NewID(), Experiment: "e"}
	if err := s.Create(j); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadResults(j); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no copy, no digest: %v", err)
	}
	want := []byte(`{"schema_version": 1}`)
	if err := s.WriteFile(j.ID, ResultsFile, want); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ReadResults(j); err != nil || string(got) != string(want) {
		t.Errorf("no digest recorded: %q, %v", got, err)
	}
	if j.ResultsSHA256, err = s.ResultsDigest(j.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ReadResults(j); err != nil || string(got) != string(want) {
		t.Errorf("the recorded copy: %q, %v", got, err)
	}
	var te *TamperedError
	s.WriteFile(j.ID, ResultsFile, []byte(`{"schema_version": 2}`))
	if _, err := s.ReadResults(j); !errors.As(err, &te) || te.Missing {
		t.Errorf("a changed copy: %v", err)
	}
	os.Remove(s.Results(j.ID))
	if _, err := s.ReadResults(j); !errors.As(err, &te) || !te.Missing {
		t.Errorf("a missing copy: %v", err)
	}
}
