// Package store is the local job store: one directory per job under
// $XDG_DATA_HOME/xrun/jobs/<id>/ holding job.json (the record), and
// results.json and logs.txt once they have been fetched, so that nothing is
// lost when the host prunes the container.
package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
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

// LogHeadBytes and LogTailBytes bound a job's log as the store keeps it
// (the start and the end; the runner's own lines are a few kilobytes): a
// job can print without end, and neither the store nor the memory of
// whoever copies the log may follow.
const (
	LogHeadBytes = 8 << 20
	LogTailBytes = 8 << 20
)

// LogWriter is a writer onto w that keeps what LogHeadBytes and
// LogTailBytes bound; its Close writes the kept end.
func LogWriter(w io.Writer) *text.HeadTail {
	return text.NewHeadTail(w, LogHeadBytes, LogTailBytes, "the job's stored log")
}

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
