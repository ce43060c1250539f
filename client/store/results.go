package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

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
