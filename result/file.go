package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Decode reads a results document and checks its schema version and the
// bounds of its figures (MinTimingMS, MaxTimingMS, MaxFigure); the
// experiment's texts in it come out bounded and without control sequences
// (MaxErrorText, MaxTailText).
func Decode(data []byte) (*Results, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var r Results
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decode results: %w", err)
	}
	if r.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("decode results: schema_version %d, this build reads %d", r.SchemaVersion, SchemaVersion)
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("decode results: %w", err)
	}
	r.texts()
	return &r, nil
}

// ReadFile reads and decodes a results file.
func ReadFile(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(data)
}

// Locate reports whether ref names a results file: a file, or a
// directory holding a FileName; path is the file.
func Locate(ref string) (path string, ok bool) {
	fi, err := os.Stat(ref)
	if err != nil {
		return "", false
	}
	if fi.IsDir() {
		ref = filepath.Join(ref, FileName)
		if _, err := os.Stat(ref); err != nil {
			return "", false
		}
	}
	return ref, true
}

// WriteFile writes r to path atomically: a reader sees the old file or the
// new one, never a torn write, even if the process dies mid-way.
// A figure that is not a finite number is written as 0, with a warning
// (Finite): JSON cannot hold it, and a run's results are worth more than
// one derived figure.
func WriteFile(path string, r *Results) error {
	r.keepFinite()
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".results-*.json")
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write results: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write results: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}
