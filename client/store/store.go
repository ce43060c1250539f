// Package store is the local job store: one directory per job under
// $XDG_DATA_HOME/xrun/jobs/<id>/ holding job.json (the record), and
// results.json and logs.txt once they have been fetched, so that nothing is
// lost when the host prunes the container.
package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xrun-dev/xrun/internal/text"
)

// Record file names inside a job directory.
const (
	RecordFile  = "job.json"
	ResultsFile = "results.json"
	LogsFile    = "logs.txt"
	// OutDir holds the copy of the container's /xrun/out.
	OutDir = "out"
)

// Job is one submitted job as the client recorded it.
type Job struct {
	ID            string `json:"id"`
	Host          string `json:"host"`
	ContainerID   string `json:"container_id,omitempty"`
	ContainerName string `json:"container_name,omitempty"`
	Experiment    string `json:"experiment"`
	ExperimentDir string `json:"experiment_dir,omitempty"`
	ImageRef      string `json:"image_ref,omitempty"`
	ImageID       string `json:"image_id,omitempty"`
	SpecHash      string `json:"spec_hash,omitempty"`
	GPUs          string `json:"gpus"`
	// CPUs is the host CPUs the job runs on ("2-3"; "": all of them).
	CPUs    string    `json:"cpus,omitempty"`
	Mode    string    `json:"mode"` // gpu or cpu
	Timeout string    `json:"timeout,omitempty"`
	Created time.Time `json:"created"`
	// Started is when a standby container was handed the job (its
	// container started before the job); nil for any other job.
	Started  *time.Time `json:"started,omitempty"`
	Finished *time.Time `json:"finished,omitempty"`
	Status   string     `json:"status"`
	ExitCode *int       `json:"exit_code,omitempty"`
	// OOMKilled is set when the kernel's OOM killer ended a process of
	// the job's container; Status says how the job ended all the same.
	OOMKilled bool `json:"oom_killed,omitempty"`
	// StoppedBy is result.StatusCancelled or result.StatusTimeout when a
	// client stopped the job, recorded before the stop (FinalStatus).
	StoppedBy string `json:"stopped_by,omitempty"`
	Error     string `json:"error,omitempty"`
	// ResultsSHA256 is the SHA-256 (hex) of the store's results.json as
	// recorded when the job ended and its results were collected; from
	// then on the results are read from the store alone, and checked
	// against it (CheckResults). Empty in older records and for a job
	// without results: nothing to check.
	ResultsSHA256 string `json:"results_sha256,omitempty"`
	// Creator is the xrun process that creates the job (Creator()):
	// a job still created whose submitter is gone will never start.
	Creator string `json:"creator,omitempty"`
	// Owner is the user who submitted the job (CurrentUser).
	Owner string `json:"owner,omitempty"`
	// Submit is how the job was submitted, beside what the fields above
	// say (directory, host, GPUs, mode, timeout), so that it can be rerun
	// the same way (xrun regress --confirm).
	Submit *SubmitArgs `json:"submit,omitempty"`
	// Split is the part of its sweep the job runs ("2/4",
	// contract.EnvSplit), and SplitOf the job its parts' results are
	// gathered into (xrun submit --split); both "" for a job that runs a
	// whole sweep.
	Split   string `json:"split,omitempty"`
	SplitOf string `json:"split_of,omitempty"`
	// Parts are the jobs a gathered job's results come from, in part
	// order: such a job ran nowhere itself.
	Parts []string `json:"parts,omitempty"`
}

// SubmitArgs are the submit options a rerun of a job repeats.
type SubmitArgs struct {
	Base string `json:"base,omitempty"`
	// CPUs repeats --cpus.
	CPUs int `json:"cpus,omitempty"`
	// Env are the names of the --env variables, never their values: a
	// rerun reads them from its own environment again.
	Env     []string `json:"env,omitempty"`
	Labels  []string `json:"labels,omitempty"`
	Root    bool     `json:"root,omitempty"`
	Network string   `json:"network,omitempty"`
	// NoStandby and NoCacheVolume repeat --no-standby and
	// --no-cache-volume.
	NoStandby     bool `json:"no_standby,omitempty"`
	NoCacheVolume bool `json:"no_cache_volume,omitempty"`
	// PendingLimit repeats a cluster's --pending-limit.
	PendingLimit time.Duration `json:"pending_limit,omitempty"`
	// Registry and PullSecret repeat where a cluster's job image was
	// pushed and the secret its pods pulled it with (--registry,
	// --pull-secret; the secret's name, never its content).
	Registry   string `json:"registry,omitempty"`
	PullSecret string `json:"pull_secret,omitempty"`
	// Place repeats the options of the place the job ran on, as its
	// backend records them (client/connect reads them; the store does
	// not look inside). Earlier versions kept them under the backend's
	// own name: UnmarshalJSON moves them here.
	Place json.RawMessage `json:"place,omitempty"`
}

// UnmarshalJSON reads the arguments. A record of an earlier version keeps
// its place's options as an object under the backend's name, a field
// this version does not know: with no Place, that object is the Place
// (the record's Host says whose options they are).
func (a *SubmitArgs) UnmarshalJSON(data []byte) error {
	type plain SubmitArgs
	if err := json.Unmarshal(data, (*plain)(a)); err != nil || len(a.Place) > 0 {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	known := submitFields()
	for name, v := range fields {
		if !known[name] && len(v) > 0 && v[0] == '{' {
			a.Place = v
		}
	}
	return nil
}

// submitFields are the JSON names of SubmitArgs' fields.
var submitFields = sync.OnceValue(func() map[string]bool {
	known := map[string]bool{}
	t := reflect.TypeFor[SubmitArgs]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		known[name] = true
	}
	return known
})

// Store is a directory of job records.
type Store struct {
	Root string
}

// DefaultRoot is $XDG_DATA_HOME/xrun/jobs, or ~/.local/share/xrun/jobs.
func DefaultRoot() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "xrun", "jobs"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the job store: %w (set XDG_DATA_HOME)", err)
	}
	return filepath.Join(home, ".local", "share", "xrun", "jobs"), nil
}

// Open returns the store at root, creating it.
func Open(root string) (*Store, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("open job store %s: %w", root, err)
	}
	return &Store{Root: root}, nil
}

// NewID returns a fresh job id: 12 hex characters from crypto/rand.
func NewID() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("read random bytes: %v", err)) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// Dir is the directory of job id.
func (s *Store) Dir(id string) string { return filepath.Join(s.Root, id) }

// Results is the path of job id's results.json in the store (Has says
// whether it is there).
func (s *Store) Results(id string) string { return filepath.Join(s.Dir(id), ResultsFile) }

// ResultsDigest is the SHA-256 (hex) of job id's results.json in the
// store, as ResultsSHA256 records it.
func (s *Store) ResultsDigest(id string) (string, error) {
	f, err := os.Open(s.Results(id))
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReadResults is the one door to job j's results.json in the store: its
// bytes, read once and checked against the digest recorded when the job
// ended, so that what is shown is what was checked. A copy that is
// missing or differs is a *TamperedError; a job without a copy and
// without a digest (no results yet) is an error wrapping os.ErrNotExist.
func (s *Store) ReadResults(j *Job) ([]byte, error) {
	data, err := os.ReadFile(s.Results(j.ID))
	switch {
	case errors.Is(err, os.ErrNotExist) && j.ResultsSHA256 != "":
		return nil, &TamperedError{ID: j.ID, Path: s.Results(j.ID), Missing: true}
	case err != nil:
		return nil, fmt.Errorf("read results of job %s: %w", j.ID, err)
	}
	if j.ResultsSHA256 != "" {
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != j.ResultsSHA256 {
			return nil, &TamperedError{ID: j.ID, Path: s.Results(j.ID)}
		}
	}
	return data, nil
}

// CheckResults checks job j's results.json in the store against the
// digest recorded when the job ended (j.ResultsSHA256): a copy that is
// missing or differs is a *TamperedError. A record without a digest (an
// older record, a job not ended) has nothing to check.
func (s *Store) CheckResults(j *Job) error {
	if j.ResultsSHA256 == "" {
		return nil
	}
	got, err := s.ResultsDigest(j.ID)
	if errors.Is(err, os.ErrNotExist) {
		return &TamperedError{ID: j.ID, Path: s.Results(j.ID), Missing: true}
	}
	if err != nil {
		return fmt.Errorf("read results of job %s: %w", j.ID, err)
	}
	if got != j.ResultsSHA256 {
		return &TamperedError{ID: j.ID, Path: s.Results(j.ID)}
	}
	return nil
}

// TamperedError is a job's results.json in the store that no longer
// matches the digest recorded when the job ended.
type TamperedError struct {
	ID, Path string
	// Missing is set when the store's copy is gone.
	Missing bool
}

func (e *TamperedError) Error() string {
	if e.Missing {
		return fmt.Sprintf("the results of job %s were removed after the job ended: the recorded copy, %s, is gone, and xrun does not collect them again from the job's container, which any user of its Docker host can change; restore the file from a backup of the job store", e.ID, e.Path)
	}
	return fmt.Sprintf("the results of job %s were changed after the job ended: the recorded copy, %s, no longer matches the SHA-256 its record (%s) kept when xrun collected it; restore the file from a backup of the job store", e.ID, e.Path, RecordFile)
}

// Log is the path of job id's log in the store (Has says whether it is
// there).
func (s *Store) Log(id string) string { return filepath.Join(s.Dir(id), LogsFile) }

// Create reserves a new id for j (when j.ID is empty) and writes its
// record. The directory is made with Mkdir, so two concurrent submits can
// never share an id.
func (s *Store) Create(j *Job) error {
	for attempt := 0; ; attempt++ {
		if j.ID == "" || attempt > 0 {
			j.ID = NewID()
		}
		err := os.Mkdir(s.Dir(j.ID), 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || attempt >= 5 {
			return fmt.Errorf("create job record: %w", err)
		}
	}
	if j.Created.IsZero() {
		j.Created = time.Now().UTC()
	}
	return s.Save(j)
}

// Adopt records j, a job another store submitted, under its own id. When
// the store has that id already (adopted at the same moment by another
// command), the record there is returned instead.
func (s *Store) Adopt(j *Job) (*Job, error) {
	if j.ID == "" || strings.ContainsAny(j.ID, `/\`) || strings.HasPrefix(j.ID, ".") {
		return nil, fmt.Errorf("adopt job %q: not a job id", j.ID)
	}
	err := os.Mkdir(s.Dir(j.ID), 0o755)
	if errors.Is(err, os.ErrExist) {
		if have, lerr := s.Load(j.ID); lerr == nil {
			return have, nil
		}
	} else if err != nil {
		return nil, fmt.Errorf("adopt job %s: %w", j.ID, err)
	}
	if err := s.Save(j); err != nil {
		return nil, err
	}
	return j, nil
}

// Save writes j's record atomically.
func (s *Store) Save(j *Job) error {
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return fmt.Errorf("encode job %s: %w", j.ID, err)
	}
	return s.WriteFile(j.ID, RecordFile, append(data, '\n'))
}

// WriteFile writes a file into job id's directory atomically (temp file,
// fsync, rename), so a reader never sees a torn record.
func (s *Store) WriteFile(id, name string, data []byte) error {
	return s.WriteFrom(id, name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFrom writes what fill writes into job id's directory as name,
// atomically, as WriteFile does: a fill that fails (a full disk) leaves
// the file as it was, and no temporary file behind.
func (s *Store) WriteFrom(id, name string, fill func(io.Writer) error) error {
	if err := WriteAtomic(filepath.Join(s.Dir(id), name), 0o644, fill); err != nil {
		return fmt.Errorf("write %s of job %s: %w", name, id, err)
	}
	return nil
}

// WriteAtomic writes what fill writes to path with permissions perm,
// atomically: a temporary file beside it, synced, then renamed over it.
// A reader sees the old file or the new one, never a torn write; a fill
// that fails (a full disk) leaves the file as it was and no temporary
// file behind.
func WriteAtomic(path string, perm os.FileMode, fill func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := fill(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), perm); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Has reports whether job id's directory holds name.
func (s *Store) Has(id, name string) bool {
	_, err := os.Stat(filepath.Join(s.Dir(id), name))
	return err == nil
}

// Load reads the record of the job with exactly this id. A record that
// exists but cannot be read or decoded is a *RecordError.
func (s *Store) Load(id string) (*Job, error) {
	path := filepath.Join(s.Dir(id), RecordFile)
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &NotFoundError{Ref: id}
		}
		return nil, &RecordError{ID: id, Path: path, Err: err}
	}
	var j Job
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, &RecordError{ID: id, Path: path, Err: err}
	}
	return &j, nil
}

// Resolve finds a job by id or unique id prefix.
func (s *Store) Resolve(ref string) (*Job, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.ContainsAny(ref, `/\`) || ref == "." || ref == ".." {
		return nil, &NotFoundError{Ref: ref, Malformed: true}
	}
	if j, err := s.Load(ref); err == nil {
		return j, nil
	}
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	var match []string
	for _, id := range ids {
		if strings.HasPrefix(id, ref) {
			match = append(match, id)
		}
	}
	switch len(match) {
	case 0:
		return nil, &NotFoundError{Ref: ref, Known: ids}
	case 1:
		return s.Load(match[0])
	}
	return nil, &AmbiguousError{Ref: ref, Candidates: match}
}

func (s *Store) ids() ([]string, error) {
	entries, err := os.ReadDir(s.Root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list jobs in %s: %w", s.Root, err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			if _, err := os.Stat(filepath.Join(s.Root, e.Name(), RecordFile)); err == nil {
				ids = append(ids, e.Name())
			}
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// Entry is one job directory of the store: its record, or why the record
// cannot be read (cut short by a full disk, say, or edited by hand).
type Entry struct {
	ID  string
	Job *Job // nil when Err is set
	Err *RecordError
	// Modified is when the unreadable record was last written.
	Modified time.Time
}

// Entries returns every job directory of the store, newest first (an
// unreadable record by its file's time); records are replaced atomically,
// so one that cannot be read is never one being written.
func (s *Store) Entries() ([]Entry, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(ids))
	for _, id := range ids {
		j, err := s.Load(id)
		var re *RecordError
		switch {
		case errors.As(err, &re):
			e := Entry{ID: id, Err: re}
			if fi, err := os.Stat(re.Path); err == nil {
				e.Modified = fi.ModTime().UTC()
			}
			out = append(out, e)
		case err == nil:
			out = append(out, Entry{ID: id, Job: j, Modified: j.Created})
		}
		// else: removed since it was listed
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Modified.After(out[b].Modified) })
	return out, nil
}

// List returns every job whose record can be read, newest first.
func (s *Store) List() ([]*Job, error) {
	entries, err := s.Entries()
	if err != nil {
		return nil, err
	}
	out := make([]*Job, 0, len(entries))
	for _, e := range entries {
		if e.Job != nil {
			out = append(out, e.Job)
		}
	}
	return out, nil
}

// Remove deletes job id's directory.
func (s *Store) Remove(id string) error {
	if id == "" || strings.ContainsAny(id, `/\`) {
		return &NotFoundError{Ref: id}
	}
	if err := os.RemoveAll(s.Dir(id)); err != nil {
		return fmt.Errorf("remove job %s: %w", id, err)
	}
	return nil
}

// NotFoundError is a job reference that matches no job.
type NotFoundError struct {
	Ref   string
	Known []string
	// Malformed: Ref cannot be a job id at all (empty, or a path).
	Malformed bool
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("no job %q", e.Ref)
	switch n := len(e.Known); {
	case e.Malformed && e.Ref == "":
		return "no job id given: give a job id or the start of one (`xrun ps --all` lists them)"
	case e.Malformed:
		return msg + ": a job id is 12 hex digits, or the start of them (`xrun ps --all` lists them)"
	case n == 0:
		return msg + ": the store holds no jobs (a job `xrun rm` removed is gone with its results; `xrun submit DIR` starts one)"
	case n <= maxSuggested:
		return msg + ": known jobs are " + strings.Join(e.Known, ", ")
	default:
		return msg + ": closest are " + strings.Join(closest(e.Ref, e.Known, maxSuggested), ", ") + " (`xrun ps --all` lists all " + fmt.Sprint(n) + ")"
	}
}

// maxSuggested is how many job ids an unknown id's error names at most.
const maxSuggested = 5

// closest returns the n ids of known nearest to ref: the longest prefix
// in common first, then the fewest edits of ref into the id's start.
func closest(ref string, known []string, n int) []string {
	type scored struct {
		id           string
		prefix, dist int
	}
	ss := make([]scored, len(known))
	for i, id := range known {
		p := 0
		for p < len(ref) && p < len(id) && ref[p] == id[p] {
			p++
		}
		head := id
		if len(head) > len(ref) {
			head = head[:len(ref)]
		}
		ss[i] = scored{id, p, text.Distance(ref, head)}
	}
	sort.SliceStable(ss, func(i, j int) bool {
		if ss[i].prefix != ss[j].prefix {
			return ss[i].prefix > ss[j].prefix
		}
		if ss[i].dist != ss[j].dist {
			return ss[i].dist < ss[j].dist
		}
		return ss[i].id < ss[j].id
	})
	out := make([]string, 0, n)
	for _, s := range ss[:min(n, len(ss))] {
		out = append(out, s.id)
	}
	return out
}

// RecordError is a job record that exists but cannot be read: cut short
// by a full disk, say, or edited by hand.
type RecordError struct {
	ID   string
	Path string
	Err  error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("job %s: record %s is unreadable (%v): `xrun rm -f %s` removes it", e.ID, e.Path, e.Err, e.ID)
}

func (e *RecordError) Unwrap() error { return e.Err }

// AmbiguousError is a prefix that matches several jobs.
type AmbiguousError struct {
	Ref        string
	Candidates []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("job prefix %q matches %d jobs (%s): give more characters", e.Ref, len(e.Candidates), strings.Join(e.Candidates, ", "))
}

// CurrentUser is the name jobs are owned by: the login name, else $USER,
// else the uid.
func CurrentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return strconv.Itoa(os.Getuid())
}
