package flat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/xrun-dev/xrun/result"
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
//
// jsontext's decoder walks the document and checks its grammar; each
// case is decoded from it by Go's JSON v2 under encoding/json's rules, so
// that Read and result.Decode agree on every document.
func Read(rd io.Reader) (*result.Results, []Row, error) {
	dec := result.StreamDecoder(rd)
	if err := expect(dec, '{'); err != nil {
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
	for dec.PeekKind() != '}' {
		tok, err := token(dec)
		if err != nil {
			return nil, nil, err
		}
		// Named as Decode matches names: in any case, the last of a
		// name written twice standing.
		key := tok.String()
		if !strings.EqualFold(key, "cases") {
			raw, err := dec.ReadValue()
			if err != nil {
				return nil, nil, fmt.Errorf("decode results: %s: %w", key, unexpected(err))
			}
			head[key] = bytes.Clone(raw)
			if key == "implementations" {
				if err := json.Unmarshal(raw, &impls); err != nil {
					return nil, nil, fmt.Errorf("decode results: implementations: %w", err)
				}
				implsKnown = true
			}
			continue
		}
		// The cases, one at a time: a run at the case cap is 170 MB.
		rows, spans = rows[:0], spans[:0]
		tok, err = token(dec)
		if err != nil {
			return nil, nil, err
		}
		if tok.Kind() == 'n' {
			continue
		}
		if tok.Kind() != '[' {
			return nil, nil, fmt.Errorf("decode results: cases is not a list")
		}
		for dec.PeekKind() != ']' {
			var c result.Case
			if err := jsonv2.UnmarshalDecode(dec, &c); err != nil {
				return nil, nil, fmt.Errorf("decode results: case %d: %w", len(spans)+1, unexpected(err))
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
		if err := expect(dec, ']'); err != nil {
			return nil, nil, err
		}
	}
	if err := expect(dec, '}'); err != nil {
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

// expect reads dec's next token, which must be the delimiter want.
func expect(dec *jsontext.Decoder, want jsontext.Kind) error {
	tok, err := token(dec)
	if err != nil {
		return err
	}
	if tok.Kind() != want {
		return fmt.Errorf("decode results: expected %q, found %s", want, tok.Kind())
	}
	return nil
}

// token is dec's next token; a document cut short is io.ErrUnexpectedEOF.
func token(dec *jsontext.Decoder) (jsontext.Token, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return jsontext.Token{}, fmt.Errorf("decode results: %w", unexpected(err))
	}
	return tok, nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
