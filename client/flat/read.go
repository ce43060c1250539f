package flat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/xrun-dev/xrun/runner/result"
)

// ReadFile reads a results.json as Read does.
func ReadFile(path string) (*result.Results, []Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return Read(f)
}

// Read reads a results document case by case and flattens it as Rows
// does, without holding the document or its cases: it returns the
// results without their cases (everything else is there) and the rows. A
// run at the case cap is a 170 MB file; decoding it whole held it twice
// and every case's full record (a gigabyte of memory) to write rows that
// need a tenth of it.
func Read(rd io.Reader) (*result.Results, []Row, error) { return read(rd, true) }

// ReadHead reads a results.json without its cases (the results' Cases
// are nil): the run's status, criteria, settings and comparisons, for the
// memory of one case.
func ReadHead(path string) (*result.Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, _, err := read(f, false)
	return r, err
}

// skipped is a JSON value decoded into nothing.
type skipped struct{}

func (*skipped) UnmarshalJSON([]byte) error { return nil }

func read(rd io.Reader, flatten bool) (*result.Results, []Row, error) {
	dec := json.NewDecoder(rd)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, nil, err
	}
	head := map[string]json.RawMessage{}
	var impls []string
	implsKnown, reorder := false, false
	type span struct {
		start int
		c     result.Case
	}
	var rows []Row
	var spans []span // each case's rows, its record without results
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("decode results: %w", err)
		}
		key, _ := tok.(string)
		if key != "cases" {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, nil, fmt.Errorf("decode results: %s: %w", key, err)
			}
			head[key] = raw
			if key == "implementations" {
				if err := json.Unmarshal(raw, &impls); err != nil {
					return nil, nil, fmt.Errorf("decode results: implementations: %w", err)
				}
				implsKnown = true
			}
			continue
		}
		if tok, err := dec.Token(); err != nil {
			return nil, nil, fmt.Errorf("decode results: cases: %w", err)
		} else if tok == nil {
			continue // "cases": null
		} else if d, ok := tok.(json.Delim); !ok || d != '[' {
			return nil, nil, fmt.Errorf("decode results: cases is not a list")
		}
		for dec.More() {
			if !flatten {
				if err := dec.Decode(&skipped{}); err != nil {
					return nil, nil, fmt.Errorf("decode results: case %d: %w", len(spans)+1, err)
				}
				continue
			}
			var c result.Case
			if err := dec.Decode(&c); err != nil {
				return nil, nil, fmt.Errorf("decode results: case %d: %w", len(spans)+1, err)
			}
			// Checked and cleaned as result.Decode does a whole document.
			if err := result.CleanCase(len(spans), &c); err != nil {
				return nil, nil, err
			}
			reorder = reorder || !implsKnown
			spans = append(spans, span{start: len(rows)})
			rows = caseRows(rows, &result.Results{Implementations: impls}, c)
			c.Results = nil
			spans[len(spans)-1].c = c
		}
		if err := expectDelim(dec, ']'); err != nil {
			return nil, nil, err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, nil, err
	}
	data, err := json.Marshal(head)
	if err != nil {
		return nil, nil, fmt.Errorf("decode results: %w", err)
	}
	r, err := result.Decode(data)
	if err != nil {
		return nil, nil, err
	}
	if reorder && len(r.Implementations) > 0 {
		// The cases came before the implementations (xrun's runner writes
		// them after): each case's rows in the order Rows gives them.
		for i, sp := range spans {
			end := len(rows)
			if i+1 < len(spans) {
				end = spans[i+1].start
			}
			order := map[string]int{}
			for k, name := range implOrder(r, caseOfRows(rows[sp.start:end])) {
				order[name] = k
			}
			slices.SortStableFunc(rows[sp.start:end], func(a, b Row) int { return order[a.Implementation] - order[b.Implementation] })
		}
	}
	for _, sp := range spans {
		r.Cases = append(r.Cases, sp.c)
	}
	finishRows(r, rows)
	r.Cases = nil
	return r, rows, nil
}

// caseOfRows is a case whose results are rows' implementations, for
// implOrder.
func caseOfRows(rows []Row) result.Case {
	c := result.Case{Results: map[string]*result.ImplResult{}}
	for _, row := range rows {
		c.Results[row.Implementation] = &result.ImplResult{}
	}
	return c
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("decode results: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("decode results: expected %q, found %v", want, tok)
	}
	return nil
}
