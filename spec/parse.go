package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/xrun-dev/xrun/internal/text"
	"gopkg.in/yaml.v3"
)

// Error is one problem in a spec file, located by line and key.
type Error struct {
	File string
	Line int
	Key  string // dotted path, e.g. "benchmark.sweep"
	Msg  string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	// Keys and messages quote what the file says, which may be megabytes.
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %s", loc, Clip(e.Key, 120), Clip(e.Msg, 2000))
	}
	return fmt.Sprintf("%s: %s", loc, Clip(e.Msg, 2000))
}

// Clip shortens s to at most n bytes (at a character), saying how much
// was left out: errors quote what a spec says, which may be megabytes.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes in all)", s[:cut], len(s))
}

// MaxBytes is the largest spec xrun reads: a spec names code and values,
// and a real one is a few kilobytes; data belongs in files it reads.
const MaxBytes = 1 << 20

// Errors is every problem found in one spec file.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Load reads and validates dir/xrun.yaml (or the file itself when path is one).
func Load(path string) (*Spec, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, FileName)
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s not found: an experiment directory needs an %s (run `xrun init DIR` to make one)", path, FileName)
		}
		return nil, fmt.Errorf("read spec: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	return Parse(path, data)
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// Parse decodes and validates a spec. Unknown keys and values of the wrong
// type are errors; every error names the file, the line and the key, and
// says what is allowed.
func Parse(file string, data []byte) (*Spec, error) {
	if len(data) > MaxBytes {
		return nil, Errors{{File: file, Msg: fmt.Sprintf("the spec is larger than %d KiB; a spec names code and values: keep data in files the experiment reads", MaxBytes>>10)}}
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return nil, Errors{yamlError(file, "", locate(data, err))}
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		line := next.Line
		if err != nil {
			return nil, Errors{yamlError(file, "", locate(data, err))}
		}
		return nil, Errors{{File: file, Line: line, Msg: "a second YAML document starts here: a spec is one document (remove the '---' and what follows, or merge it into the first)"}}
	}
	if len(root.Content) == 0 {
		return nil, Errors{{File: file, Msg: "the file is empty; it needs at least name and benchmark"}}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, Errors{{File: file, Line: doc.Line, Msg: "the top level must be a mapping (name: ..., benchmark: ...)"}}
	}
	var errs Errors
	lines := map[string]int{}
	checkKeys(file, doc, reflect.TypeOf(Spec{}), "", "", lines, &errs)
	if len(errs) > 0 {
		return nil, errs
	}
	s := &Spec{Path: file, Hash: hashBytes(data)}
	if err := doc.Decode(s); err != nil {
		// checkKeys has tried every value already; this is a last resort
		// for one it missed, located by line alone.
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, m := range te.Errors {
				errs = append(errs, yamlError(file, "", errors.New(m)))
			}
			return nil, errs
		}
		return nil, Errors{yamlError(file, "", err)}
	}
	s.Lines = lines
	for i := range s.Criteria {
		s.Criteria[i].Line = lines[fmt.Sprintf("criteria[%d]", i)]
	}
	errs = append(errs, validate(s, file, lines)...)
	if len(errs) > 0 {
		return nil, errs
	}
	return s, nil
}

// locate adds the line to a yaml.v3 error that lacks one: a control
// character, or bytes that are not UTF-8, are found by scanning data.
func locate(data []byte, err error) error {
	// The YAML decoder blames the line before a tab-indented one.
	if strings.Contains(err.Error(), "found a tab character") {
		for i, l := range strings.Split(string(data), "\n") {
			if indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]; strings.Contains(indent, "\t") {
				return fmt.Errorf("line %d: a tab indents this line; YAML indents with spaces only: replace it with spaces", i+1)
			}
		}
	}
	if yamlLine.MatchString(strings.TrimPrefix(err.Error(), "yaml: ")) {
		return err
	}
	line := 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return fmt.Errorf("line %d: byte 0x%02x is not UTF-8: save the file as UTF-8", line, data[i])
		case r == '\n':
			line++
		case r != '\t' && r != '\r' && (r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 && r != 0x85):
			return fmt.Errorf("line %d: control character %U is not allowed in YAML: remove it", line, r)
		}
		i += size
	}
	return err
}

func yamlError(file, key string, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: n, Key: key, Msg: m[2]}
	}
	return &Error{File: file, Key: key, Msg: msg}
}

// Types the walk treats apart: Implementations and Image are written in
// two shapes; the others decode themselves and are checked as one value.
var (
	typeImpls    = reflect.TypeOf(Implementations{})
	typeImpl     = reflect.TypeOf(Implementation{})
	typeImage    = reflect.TypeOf(Image{})
	typeDuration = reflect.TypeOf(Duration{})
	typeGPUs     = reflect.TypeOf(GPUs{})
	typeByteSize = reflect.TypeOf(ByteSize(0))
)

// checkKeys walks a node against the type it decodes into, reporting
// unknown keys with the allowed ones and values of the wrong type with what
// to write instead, and records the line of every key path. yaml.v3's own
// type errors ("cannot unmarshal !!str `two` into float64") name neither
// the key nor what it takes, so every value is checked here, where its key
// is known, before the spec is decoded.
func checkKeys(file string, n *yaml.Node, t reflect.Type, want, path string, lines map[string]int, errs *Errors) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if want == "" {
		want = wantOf(t)
	}
	wrong := func() {
		*errs = append(*errs, &Error{File: file, Line: n.Line, Key: path,
			Msg: fmt.Sprintf("found %s; write %s", describe(n), want)})
	}
	if n.Kind == yaml.AliasNode {
		checkValue(file, n, t, want, path, errs)
		return
	}
	switch t {
	case typeImpls:
		if n.Kind != yaml.MappingNode {
			if !isNull(n) {
				wrong()
			}
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := join(path, k.Value)
			lines[p] = k.Line
			if v.Kind != yaml.ScalarNode {
				checkKeys(file, v, typeImpl, "module:callable, or a mapping with keys "+strings.Join(yamlKeys(typeImpl), ", "), p, lines, errs)
			}
		}
		return
	case typeImage:
		if n.Kind == yaml.ScalarNode {
			return
		}
	}
	structural := t.Kind() == reflect.Struct && (t == typeImage || !hasUnmarshaler(t)) ||
		t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && !hasUnmarshaler(t)
	if !structural {
		// A value that decodes itself, or a list of such values.
		if t.Kind() == reflect.Slice && !hasUnmarshaler(t) {
			if isNull(n) {
				return
			}
			if n.Kind != yaml.SequenceNode {
				wrong()
				return
			}
			for i, e := range n.Content {
				checkKeys(file, e, t.Elem(), "", fmt.Sprintf("%s[%d]", path, i), lines, errs)
			}
			return
		}
		recordKeys(n, path, lines)
		checkValue(file, n, t, want, path, errs)
		return
	}
	if t.Kind() == reflect.Slice {
		if isNull(n) {
			return
		}
		if n.Kind != yaml.SequenceNode {
			wrong()
			return
		}
		for i, e := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			lines[p] = e.Line
			checkKeys(file, e, t.Elem(), "", p, lines, errs)
		}
		return
	}
	if n.Kind != yaml.MappingNode {
		if path != "" {
			wrong()
		}
		return
	}
	fields := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		fields[name] = f
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := join(path, k.Value)
		lines[p] = k.Line
		f, ok := fields[k.Value]
		if !ok {
			where := "at the top level"
			if path != "" {
				where = "in " + path
			}
			msg := fmt.Sprintf("unknown key %s", where)
			if near := text.Closest(k.Value, yamlKeys(t)); near != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", near)
			}
			*errs = append(*errs, &Error{File: file, Line: k.Line, Key: p,
				Msg: msg + "; allowed: " + strings.Join(yamlKeys(t), ", ")})
			continue
		}
		if seen[k.Value] {
			*errs = append(*errs, &Error{File: file, Line: k.Line, Key: p, Msg: "key given twice"})
		}
		seen[k.Value] = true
		checkKeys(file, v, f.Type, f.Tag.Get("want"), p, lines, errs)
	}
}

// recordKeys records the lines of a self-decoding mapping's keys (params,
// sweep axes), which later messages name.
func recordKeys(n *yaml.Node, path string, lines map[string]int) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		lines[join(path, n.Content[i].Value)] = n.Content[i].Line
	}
}

// checkValue decodes one value on its own into a fresh t. A type's own
// UnmarshalYAML says what is wrong through a *valueError, which may name a
// key below path; anything else is a value of the wrong kind.
func checkValue(file string, n *yaml.Node, t reflect.Type, want, path string, errs *Errors) {
	err := n.Decode(reflect.New(t).Interface())
	if err == nil {
		if isInt(t) && n.ShortTag() == "!!float" {
			// yaml.v3 truncates 1.5 to 1 for an int; a count given a
			// fraction is a mistake to point out, not to round.
			if f, ferr := strconv.ParseFloat(n.Value, 64); ferr != nil || f != math.Trunc(f) {
				*errs = append(*errs, &Error{File: file, Line: n.Line, Key: path,
					Msg: fmt.Sprintf("found %s; write %s", describe(n), want)})
			}
		}
		return
	}
	var ve *valueError
	if errors.As(err, &ve) {
		*errs = append(*errs, &Error{File: file, Line: ve.line, Key: path + ve.key, Msg: ve.msg})
		return
	}
	*errs = append(*errs, &Error{File: file, Line: n.Line, Key: path,
		Msg: fmt.Sprintf("found %s; write %s", describe(n), want)})
}

// wantOf says what a value of type t is written as, for fields whose
// "want" tag does not say it better.
func wantOf(t reflect.Type) string {
	switch t {
	case typeImpls:
		return "a mapping of name: module:callable"
	case typeDuration:
		return durationWant
	case typeByteSize:
		return byteSizeWant
	case typeGPUs:
		return gpusWant
	case typeImage:
		return "a base image name, or a mapping with keys " + strings.Join(yamlKeys(t), ", ")
	}
	switch t.Kind() {
	case reflect.String:
		return "a single string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "a whole number, e.g. 10"
	case reflect.Float32, reflect.Float64:
		return "a number, e.g. 2 or 0.5"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return "a list of mappings with keys " + strings.Join(yamlKeys(t.Elem()), ", ")
		}
		return "a list like [a, b]"
	case reflect.Struct:
		return "a mapping with keys " + strings.Join(yamlKeys(t), ", ")
	}
	return "another value"
}

// describe names what a node holds, as the user wrote it.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias (*" + n.Value + ")"
	}
	switch n.ShortTag() {
	case "!!null":
		return "nothing"
	case "!!str":
		return Clip(strconv.Quote(n.Value), 80)
	}
	return Clip(n.Value, 80)
}

// isInt reports whether t is a plain whole number (ByteSize, an int64,
// reads its own units).
func isInt(t reflect.Type) bool {
	return (t.Kind() == reflect.Int || t.Kind() == reflect.Int64) && !hasUnmarshaler(t)
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func hasUnmarshaler(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem())
}

func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		name := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
