package flat

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"

	fastjson "github.com/goccy/go-json"
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
func Read(rd io.Reader) (*result.Results, []Row, error) { return read(rd) }

func read(rd io.Reader) (*result.Results, []Row, error) {
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
	closed := false  // the document's closing brace was read with the cases
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
		each := func(raw []byte) error {
			var c result.Case
			if err := decodeCase(raw, &c); err != nil {
				return fmt.Errorf("decode results: case %d: %w", len(spans)+1, err)
			}
			own(reflect.ValueOf(&c))
			// Checked and cleaned as result.Decode does a whole document.
			if err := result.CleanCase(len(spans), &c); err != nil {
				return err
			}
			reorder = reorder || !implsKnown
			spans = append(spans, span{start: len(rows)})
			rows = caseRows(rows, &result.Results{Implementations: impls}, c)
			c.Results = nil
			spans[len(spans)-1].c = c
			return nil
		}
		if dec, closed, err = readCases(dec, rd, each); err != nil {
			return nil, nil, err
		}
		if closed {
			break
		}
	}
	if !closed {
		if err := expectDelim(dec, '}'); err != nil {
			return nil, nil, err
		}
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

// readCases reads the value of the document's "cases" key, whose key dec
// has just read from rd, and calls each with every case's bytes (each nil:
// skips them). It finds where a case ends itself (skipValue), as
// encoding/json takes 1.8 s to step over the cases of a run at the case
// cap and this a tenth of that, and decodes a case with a faster decoder
// than encoding/json's (a third of its time). It returns a decoder that
// reads the document's remaining keys as dec would have, or closed when
// the cases were the document's last.
func readCases(dec *json.Decoder, rd io.Reader, each func([]byte) error) (_ *json.Decoder, closed bool, err error) {
	br := bufio.NewReaderSize(io.MultiReader(dec.Buffered(), rd), 1<<20)
	cut := func(err error) error {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("decode results: cases: %w", err)
	}
	c, err := nextByte(br)
	if err == nil && c == ':' {
		c, err = nextByte(br)
	}
	if err != nil {
		return nil, false, cut(err)
	}
	switch c {
	case 'n': // null
		rest := make([]byte, 3)
		if _, err := io.ReadFull(br, rest); err != nil || string(rest) != "ull" {
			return nil, false, fmt.Errorf("decode results: cases is not a list")
		}
	case '[':
		var buf []byte
		capture := &buf
		if each == nil {
			capture = nil
		}
		if c, err = nextByte(br); err != nil {
			return nil, false, cut(err)
		}
		for c != ']' {
			if err := br.UnreadByte(); err != nil {
				return nil, false, cut(err)
			}
			buf = buf[:0]
			if err := skipValue(br, capture); err != nil {
				return nil, false, cut(err)
			}
			if each != nil {
				if err := each(buf); err != nil {
					return nil, false, err
				}
			}
			if c, err = nextByte(br); err != nil {
				return nil, false, cut(err)
			}
			switch c {
			case ',':
				if c, err = nextByte(br); err != nil {
					return nil, false, cut(err)
				}
				if c == ']' {
					return nil, false, fmt.Errorf("decode results: cases: a ',' before the list's end")
				}
			case ']':
			default:
				return nil, false, fmt.Errorf("decode results: cases: expected ',' or ']' after a case, found %q", c)
			}
		}
	default:
		return nil, false, fmt.Errorf("decode results: cases is not a list")
	}
	c, err = nextByte(br)
	if err != nil {
		return nil, false, fmt.Errorf("decode results: %w", io.ErrUnexpectedEOF)
	}
	switch c {
	case '}':
		return nil, true, nil
	case ',':
		// The rest is an object's remaining members: read as an object.
		next := json.NewDecoder(io.MultiReader(strings.NewReader("{"), br))
		if err := expectDelim(next, '{'); err != nil {
			return nil, false, err
		}
		return next, false, nil
	}
	return nil, false, fmt.Errorf("decode results: expected ',' or '}' after the cases, found %q", c)
}

// nextByte returns the next byte of br that is not JSON white space.
func nextByte(br *bufio.Reader) (byte, error) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c, nil
	}
}

// skipValue reads past the JSON value that starts at br's next byte that
// is not white space, appending its bytes to capture unless that is nil:
// an array or object to its closing bracket, a string to its closing
// quote, or a literal (number, true, false, null) to the byte after it,
// which is put back. It checks brackets and quotes, not the rest of the
// grammar: a captured value's decoder checks that.
func skipValue(br *bufio.Reader, capture *[]byte) error {
	c, err := nextByte(br)
	if err != nil {
		return err
	}
	keep := func(b ...byte) {
		if capture != nil {
			*capture = append(*capture, b...)
		}
	}
	keep(c)
	var stack []byte // the closing brackets of the open arrays and objects
	inString := c == '"'
	switch c {
	case '[':
		stack = append(stack, ']')
	case '{':
		stack = append(stack, '}')
	case '"':
	case ']', '}', ',', ':':
		return fmt.Errorf("expected a value, found %q", c)
	default: // a literal
		for {
			c, err := br.ReadByte()
			if err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			switch c {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				return br.UnreadByte()
			}
			keep(c)
		}
	}
	escaped := false
	for {
		if br.Buffered() == 0 {
			if _, err := br.Peek(1); err != nil {
				return err
			}
		}
		chunk, _ := br.Peek(br.Buffered())
		for i, c := range chunk {
			end := false
			switch {
			case escaped:
				escaped = false
			case inString:
				switch c {
				case '\\':
					escaped = true
				case '"':
					inString = false
					end = len(stack) == 0
				}
			case c == '"':
				inString = true
			case c == '[':
				stack = append(stack, ']')
			case c == '{':
				stack = append(stack, '}')
			case c == ']' || c == '}':
				if stack[len(stack)-1] != c {
					return fmt.Errorf("unbalanced %q", c)
				}
				stack = stack[:len(stack)-1]
				end = len(stack) == 0
			}
			if end {
				keep(chunk[:i+1]...)
				_, err := br.Discard(i + 1)
				return err
			}
		}
		keep(chunk...)
		if _, err := br.Discard(len(chunk)); err != nil {
			return err
		}
	}
}

// decodeCase decodes a case's bytes into c. A panic of the decoder on
// bytes it did not expect is an error of that case's, not a crash of the
// command (a finalize's import, xrun results).
func decodeCase(raw []byte, c *result.Case) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("not a case the decoder can read (%v)", p)
		}
	}()
	return fastjson.Unmarshal(raw, c)
}

// own gives every string that v holds its own memory. The decoder's
// strings share one copy of the bytes they were decoded from, and a row
// that kept a case's label or an implementation's name kept the case's
// whole text: a run at the case cap then held all of its 170 MB.
func own(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			own(v.Elem())
		}
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		if !v.CanSet() {
			return
		}
		e := reflect.New(v.Elem().Type()).Elem()
		e.Set(v.Elem())
		own(e)
		v.Set(e)
	case reflect.String:
		if v.CanSet() {
			v.SetString(strings.Clone(v.String()))
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				own(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			own(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		owned := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(it.Key())
			own(k)
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			own(e)
			owned.SetMapIndex(k, e)
		}
		v.Set(owned)
	}
}
