package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

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
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

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
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s not found: an experiment directory needs an %s (run `xrun init DIR` to make one)", path, FileName)
		}
		return nil, fmt.Errorf("read spec: %w", err)
	}
	return Parse(path, data)
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// Parse decodes and validates a spec. Unknown keys are errors; every error
// names the file, the line and the key, and says what is allowed.
func Parse(file string, data []byte) (*Spec, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, Errors{yamlError(file, "", err)}
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
	checkKeys(file, doc, reflect.TypeOf(Spec{}), "", lines, &errs)
	if len(errs) > 0 {
		return nil, errs
	}
	s := &Spec{Path: file, Hash: hashBytes(data)}
	if err := doc.Decode(s); err != nil {
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

func yamlError(file, key string, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: n, Key: key, Msg: m[2]}
	}
	return &Error{File: file, Key: key, Msg: msg}
}

// custom are types that decode themselves; their inner keys are checked
// by checkKeys only where they hold a struct.
var (
	typeImpls  = reflect.TypeOf(Implementations{})
	typeImage  = reflect.TypeOf(Image{})
	typeParams = reflect.TypeOf(Params{})
	typeSweep  = reflect.TypeOf(Sweep{})
)

// checkKeys walks a mapping node against a struct type, reporting unknown
// keys with the allowed ones, and records the line of every key path.
func checkKeys(file string, n *yaml.Node, t reflect.Type, path string, lines map[string]int, errs *Errors) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case typeImpls:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := join(path, k.Value)
			lines[p] = k.Line
			if v.Kind == yaml.MappingNode {
				checkKeys(file, v, reflect.TypeOf(Implementation{}), p, lines, errs)
			}
		}
		return
	case typeImage:
		if n.Kind == yaml.ScalarNode {
			return
		}
	case typeParams, typeSweep:
		for i := 0; i+1 < len(n.Content); i += 2 {
			lines[join(path, n.Content[i].Value)] = n.Content[i].Line
		}
		return
	}
	switch t.Kind() {
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode || t.Elem().Kind() != reflect.Struct {
			return
		}
		for i, e := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			lines[p] = e.Line
			checkKeys(file, e, t.Elem(), p, lines, errs)
		}
		return
	case reflect.Struct:
	default:
		return
	}
	if n.Kind != yaml.MappingNode {
		if path != "" && t.NumField() > 0 && !hasUnmarshaler(t) {
			*errs = append(*errs, &Error{File: file, Line: n.Line, Key: path,
				Msg: fmt.Sprintf("expected a mapping with keys %s", strings.Join(yamlKeys(t), ", "))})
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
			*errs = append(*errs, &Error{File: file, Line: k.Line, Key: p,
				Msg: fmt.Sprintf("unknown key %s; allowed: %s", where, strings.Join(yamlKeys(t), ", "))})
			continue
		}
		if seen[k.Value] {
			*errs = append(*errs, &Error{File: file, Line: k.Line, Key: p, Msg: "key given twice"})
		}
		seen[k.Value] = true
		checkKeys(file, v, f.Type, p, lines, errs)
	}
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
