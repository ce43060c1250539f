package result

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
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
// and costing a tenth of decoding them. What is passed over is not
// checked: a document whose cases are not JSON may read here and fail
// Decode.
func ReadHead(rd io.Reader) (*Results, error) {
	head, err := headOf(bufio.NewReaderSize(rd, 64<<10))
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

// headOf copies the document that br starts with, the values of its
// top-level "cases" and "comparisons" members replaced by [].
func headOf(br *bufio.Reader) ([]byte, error) {
	var out bytes.Buffer
	depth := 0 // of the document's arrays and objects
	var str jsonString
	keyStart := -1 // where in out the last string of depth 1 began
	key := ""      // that string, once read (a key when a colon follows)
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			if depth != 0 || str.in || out.Len() == 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return out.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
		out.WriteByte(c)
		if str.in {
			if str.ends(c) && depth == 1 {
				key = string(out.Bytes()[keyStart:])
			}
			continue
		}
		switch c {
		case '"':
			str.in, keyStart = true, out.Len()-1
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth < 0 {
				return nil, errors.New("unbalanced brackets")
			}
			if depth == 0 {
				// The document's end: what follows is not read, as
				// Decode reads the first value alone.
				return out.Bytes(), nil
			}
		case ':':
			if depth == 1 && (key == `"cases"` || key == `"comparisons"`) {
				out.WriteString("[]")
				if err := skipValue(br); err != nil {
					return nil, fmt.Errorf("%s: %w", key, err)
				}
			}
		}
	}
}

// skipValue reads past the JSON value that br starts with (after
// whitespace): an array or object to its matching bracket, a string to
// its closing quote, anything else up to the comma or bracket after it,
// which it leaves unread. It scans what br has buffered a slice at a
// time: a run's cases are nearly all of its document.
func skipValue(br *bufio.Reader) error {
	depth := 0
	var str jsonString
	for {
		if br.Buffered() == 0 {
			if _, err := br.Peek(1); err != nil {
				return unexpected(err)
			}
		}
		buf, _ := br.Peek(br.Buffered())
		for i, c := range buf {
			if str.in {
				if str.ends(c) && depth == 0 {
					_, err := br.Discard(i + 1)
					return err
				}
				continue
			}
			switch c {
			case '"':
				str.in = true
			case '[', '{':
				depth++
			case ']', '}':
				if depth == 0 { // the end of the document's object: a literal ended
					_, err := br.Discard(i)
					return err
				}
				if depth--; depth == 0 {
					_, err := br.Discard(i + 1)
					return err
				}
			case ',':
				if depth == 0 {
					_, err := br.Discard(i)
					return err
				}
			}
		}
		if _, err := br.Discard(len(buf)); err != nil {
			return err
		}
	}
}

// jsonString follows a JSON string a byte at a time (its opening quote
// read): in while in it, escaped after a backslash.
type jsonString struct{ in, escaped bool }

// ends takes the string's next byte and says whether it closed the string.
func (s *jsonString) ends(c byte) bool {
	switch {
	case s.escaped:
		s.escaped = false
	case c == '\\':
		s.escaped = true
	case c == '"':
		s.in = false
		return true
	}
	return false
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
