package result

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// ReadHeadFile reads a results file as ReadHead does.
func ReadHeadFile(path string) (*Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadHead(f)
}

// ReadHead reads a results document without its cases and comparisons
// (Cases and Comparisons are nil): the run's status, criteria, settings
// and warnings, checked as Decode checks them. A run at the case cap is a
// document of 80-170 MB, nearly all of it cases and comparisons; they are
// passed over as the document streams by, holding a buffer's worth of it
// and costing a tenth of decoding them. Only their grammar is checked: a
// document whose cases are JSON but not cases may read here and fail
// Decode.
func ReadHead(rd io.Reader) (*Results, error) {
	head, err := headOf(rd)
	if err != nil {
		return nil, fmt.Errorf("decode results: %w", err)
	}
	r, err := Decode(head)
	if err != nil {
		return nil, err
	}
	r.Cases, r.Comparisons = nil, nil
	return r, nil
}

// StreamDecoder walks a results document from rd under the rules Decode
// reads it by (encoding/json's: a name in any case, the last of a name
// written twice, strings that are not UTF-8), checking its grammar, for
// readers that take it a member or a case at a time.
func StreamDecoder(rd io.Reader) *jsontext.Decoder {
	return jsontext.NewDecoder(rd, jsonv1.DefaultOptionsV1())
}

// headOf copies the object that rd starts with, the values of its
// members "cases" and "comparisons" (by any case of the name, as Decode
// matches them) replaced by []. The passed-over values are checked as
// JSON too.
func headOf(rd io.Reader) ([]byte, error) {
	dec := StreamDecoder(rd)
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, unexpected(err)
	}
	if tok.Kind() != '{' {
		return nil, fmt.Errorf("a results document is a JSON object, not %s", tok.Kind())
	}
	out := []byte{'{'}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, unexpected(err)
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		if out, err = jsontext.AppendQuote(out, name.String()); err != nil {
			return nil, err
		}
		out = append(out, ':')
		if n := name.String(); strings.EqualFold(n, "cases") || strings.EqualFold(n, "comparisons") {
			if err := dec.SkipValue(); err != nil {
				return nil, fmt.Errorf("%s: %w", n, unexpected(err))
			}
			out = append(out, "[]"...)
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return nil, unexpected(err)
		}
		out = append(out, v...)
	}
	// The object's end: what follows is not read, as Decode reads the
	// first value alone.
	return append(out, '}'), nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
