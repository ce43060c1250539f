package spec

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// valueError is a value a type's UnmarshalYAML cannot read. Parse reports
// it under the value's own key, followed by key when the problem is below
// it (".T", "[1].T"), so that the message names the exact key.
type valueError struct {
	line int
	key  string
	msg  string
}

func (e *valueError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func wrongValue(n *yaml.Node, key, want string) *valueError {
	return &valueError{line: n.Line, key: key, msg: fmt.Sprintf("found %s; write %s", describe(n), want)}
}

// Param is one named parameter value (a string, bool, int64 or float64).
type Param struct {
	Key   string
	Value any
}

// Params is an ordered set of parameters, in the order they were written.
type Params []Param

// Get returns the value of key.
func (ps Params) Get(key string) (any, bool) {
	for _, p := range ps {
		if p.Key == key {
			return p.Value, true
		}
	}
	return nil, false
}

// Merge returns ps with every parameter of over set (replacing or appended).
func (ps Params) Merge(over Params) Params {
	out := append(Params(nil), ps...)
	for _, o := range over {
		replaced := false
		for i := range out {
			if out[i].Key == o.Key {
				out[i].Value = o.Value
				replaced = true
			}
		}
		if !replaced {
			out = append(out, o)
		}
	}
	return out
}

// Only returns the parameters named in keys, in ps's order; all of ps when
// keys is empty.
func (ps Params) Only(keys []string) Params {
	if len(keys) == 0 {
		return ps
	}
	var out Params
	for _, p := range ps {
		for _, k := range keys {
			if p.Key == k {
				out = append(out, p)
			}
		}
	}
	return out
}

// VaryingKeys returns the keys whose values differ between cases (or are
// missing from some), in the order they first appear.
func VaryingKeys(cases []Params) []string {
	var keys []string
	seen := map[string]bool{}
	for _, c := range cases {
		for _, p := range c {
			if seen[p.Key] {
				continue
			}
			seen[p.Key] = true
			first := FormatValue(p.Value)
			for _, o := range cases {
				v, ok := o.Get(p.Key)
				if !ok || FormatValue(v) != first {
					keys = append(keys, p.Key)
					break
				}
			}
		}
	}
	return keys
}

// Map returns the parameters as a map (for JSON).
func (ps Params) Map() map[string]any {
	m := make(map[string]any, len(ps))
	for _, p := range ps {
		m[p.Key] = p.Value
	}
	return m
}

// Label renders the parameters as "T=1024 M=64", in order.
func (ps Params) Label() string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.Key + "=" + FormatValue(p.Value)
	}
	return strings.Join(parts, " ")
}

// FormatValue renders a parameter value compactly.
func FormatValue(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

// UnmarshalYAML keeps the mapping's order and turns scalars into Go values.
func (ps *Params) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return wrongValue(n, "", "a mapping of name: value, e.g. {B: 4, dtype: bfloat16}")
	}
	out := Params{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if v := n.Content[i+1]; v.Kind == yaml.SequenceNode {
			return wrongValue(v, "."+n.Content[i].Value, "a single number, string or bool (values to try one by one go in sweep)")
		}
		v, err := scalarValue(n.Content[i+1], "."+n.Content[i].Value)
		if err != nil {
			return err
		}
		out = append(out, Param{Key: n.Content[i].Value, Value: v})
	}
	*ps = out
	return nil
}

// Axis is one sweep dimension.
type Axis struct {
	Key    string
	Values []any
}

// Axes is one group of sweep axes; its cases are their cartesian product
// with the first axis varying slowest.
type Axes []Axis

// Sweep is one group of axes ("T: [256, 512]") or several groups written as
// a list, whose cases are concatenated in order.
type Sweep []Axes

// UnmarshalYAML reads "name: [v1, v2, ...]" entries in order, or a list of
// such mappings.
func (s *Sweep) UnmarshalYAML(n *yaml.Node) error {
	groups := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		groups = n.Content
	}
	out := Sweep{}
	for i, g := range groups {
		key := ""
		if n.Kind == yaml.SequenceNode {
			key = fmt.Sprintf("[%d]", i)
		}
		axes, err := decodeAxes(g, key)
		if err != nil {
			return err
		}
		out = append(out, axes)
	}
	*s = out
	return nil
}

func decodeAxes(n *yaml.Node, key string) (Axes, error) {
	if n.Kind != yaml.MappingNode {
		return nil, wrongValue(n, key, "a mapping of name: [values], e.g. {T: [256, 512]}, or a list of them")
	}
	out := Axes{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, vn := n.Content[i], n.Content[i+1]
		ax := Axis{Key: k.Value}
		nodes := []*yaml.Node{vn}
		if vn.Kind == yaml.SequenceNode {
			nodes = vn.Content
		}
		for _, e := range nodes {
			v, err := scalarValue(e, key+"."+k.Value)
			if err != nil {
				return nil, err
			}
			ax.Values = append(ax.Values, v)
		}
		if len(ax.Values) == 0 {
			return nil, &valueError{line: k.Line, key: key + "." + k.Value,
				msg: fmt.Sprintf("sweep axis %q has no values; list at least one, e.g. %s: [256]", k.Value, k.Value)}
		}
		out = append(out, ax)
	}
	return out, nil
}

// Cases expands the sweep over base: one Params per point.
func (s Sweep) Cases(base Params) []Params {
	if len(s) == 0 {
		return []Params{base}
	}
	var all []Params
	for _, axes := range s {
		cases := []Params{base}
		for _, ax := range axes {
			var next []Params
			for _, c := range cases {
				for _, v := range ax.Values {
					next = append(next, c.Merge(Params{{Key: ax.Key, Value: v}}))
				}
			}
			cases = next
		}
		all = append(all, cases...)
	}
	return all
}

// Count returns how many cases Cases makes, without making them. A count
// past math.MaxInt is returned as math.MaxInt.
func (s Sweep) Count() int {
	if len(s) == 0 {
		return 1
	}
	total := 0
	for _, axes := range s {
		n := 1
		for _, ax := range axes {
			n = satMul(n, len(ax.Values))
		}
		total = satAdd(total, n)
	}
	return total
}

// shape renders the sweep's size as "T(30) x B(4) + T(2)".
func (s Sweep) shape() string {
	groups := make([]string, len(s))
	for i, axes := range s {
		dims := make([]string, len(axes))
		for j, ax := range axes {
			dims[j] = fmt.Sprintf("%s(%d)", ax.Key, len(ax.Values))
		}
		groups[i] = strings.Join(dims, " x ")
	}
	return strings.Join(groups, " + ")
}

// satMul and satAdd are a*b and a+b for counts >= 0, held at math.MaxInt.
func satMul(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}

func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// Keys returns the axis names of every group, first appearance first.
func (s Sweep) Keys() []string {
	var out []string
	seen := map[string]bool{}
	for _, axes := range s {
		for _, ax := range axes {
			if !seen[ax.Key] {
				seen[ax.Key] = true
				out = append(out, ax.Key)
			}
		}
	}
	return out
}

// scalarValue reads one parameter value; key names it in errors.
func scalarValue(n *yaml.Node, key string) (any, error) {
	const want = "a single number, string or bool"
	if n.Kind != yaml.ScalarNode {
		return nil, wrongValue(n, key, want)
	}
	switch n.Tag {
	case "!!int":
		v, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil {
			return nil, wrongValue(n, key, "a whole number that fits in 64 bits")
		}
		return v, nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, err
		}
		return f, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, err
		}
		return b, nil
	case "!!null":
		return nil, wrongValue(n, key, want)
	}
	// yaml.v3 reads 1e-2 as a string (YAML 1.2 core schema needs a dot).
	if f, err := strconv.ParseFloat(n.Value, 64); err == nil && n.Style == 0 {
		return f, nil
	}
	return n.Value, nil
}

// UnmarshalYAML reads implementations as "name: module:callable" or
// "name: {fn: module:callable, requires: [...]}", keeping their order.
func (is *Implementations) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return wrongValue(n, "", "a mapping of name: module:callable")
	}
	out := Implementations{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		im := Implementation{}
		if v.Kind == yaml.ScalarNode {
			im.Fn = v.Value
		} else if err := v.Decode(&im); err != nil {
			return err
		}
		im.Name = k.Value
		out = append(out, im)
	}
	*is = out
	return nil
}

// UnmarshalYAML reads an image as a plain reference or a mapping.
func (im *Image) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*im = Image{Base: n.Value}
		return nil
	}
	type plain Image
	return n.Decode((*plain)(im))
}

// gpusWant says how resources.gpus is written.
const gpusWant = "a count (2), all, or device ids like [0, 2]"

// UnmarshalYAML reads a GPU request: 2, "all", "0,2" or [0, 2].
func (g *GPUs) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		var ids []string
		for i, e := range n.Content {
			if e.Kind != yaml.ScalarNode || e.Value == "" {
				return wrongValue(e, fmt.Sprintf("[%d]", i), "a device index or GPU-<uuid>")
			}
			ids = append(ids, e.Value)
		}
		*g = GPUs{IDs: ids}
		return nil
	case yaml.ScalarNode:
	default:
		return wrongValue(n, "", gpusWant)
	}
	parsed, err := ParseGPUs(n.Value)
	if err != nil {
		return &valueError{line: n.Line, msg: err.Error()}
	}
	*g = parsed
	return nil
}

// ParseGPUs parses a GPU request as written on the command line or in the
// spec: a count ("2"), "all", "none"/"0", or device ids ("0,2", UUIDs, or
// docker's spelling "device=0" / "device=0,2", the one way to name a single
// index).
func ParseGPUs(s string) (GPUs, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "device="); ok {
		ids, err := splitIDs(s, strings.Trim(rest, `"'`))
		if err != nil {
			return GPUs{}, err
		}
		return GPUs{IDs: ids}, nil
	}
	switch s {
	case "":
		return GPUs{}, nil
	case "0", "none":
		return GPUs{Zero: true}, nil
	case "all":
		return GPUs{All: true}, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 {
			return GPUs{}, fmt.Errorf("gpus %q: a count must be >= 0", s)
		}
		return GPUs{Count: n, Zero: n == 0}, nil
	}
	ids, err := splitIDs(s, s)
	if err != nil {
		return GPUs{}, err
	}
	if len(ids) == 1 && !strings.HasPrefix(ids[0], "GPU-") {
		return GPUs{}, fmt.Errorf("gpus %q: write a count (2), all, or device ids (0,2, device=0 or GPU-<uuid>)", s)
	}
	return GPUs{IDs: ids}, nil
}

// splitIDs splits a comma-separated list of device ids.
func splitIDs(whole, list string) ([]string, error) {
	var ids []string
	for _, id := range strings.Split(list, ",") {
		id = strings.TrimSpace(id)
		if id == "" {
			return nil, fmt.Errorf("gpus %q: empty device id; write a count (2), all, or ids (0,2 or device=0)", whole)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// durationWant says how a Duration is written.
const durationWant = "a duration like 90s, 30m or 1h30m"

// UnmarshalYAML reads a Go duration ("30m", "1h30m", "90s").
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return wrongValue(n, "", durationWant)
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return wrongValue(n, "", durationWant)
	}
	d.Duration = v
	return nil
}

// MarshalYAML writes the duration back as text.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}

// ParseByteSize reads "8g", "512MiB", "1.5g" or a plain count of bytes.
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	mult, ok := byteUnits[strings.TrimSpace(t[i:])]
	if !ok || i == 0 {
		units := make([]string, 0, len(byteUnits))
		for u := range byteUnits {
			if u != "" {
				units = append(units, u)
			}
		}
		sort.Strings(units)
		return 0, fmt.Errorf("size %q: write a number with a unit (%s), e.g. 8g", s, strings.Join(units, ", "))
	}
	f, err := strconv.ParseFloat(t[:i], 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("size %q: not a number", s)
	}
	return ByteSize(f * float64(mult)), nil
}

// byteSizeWant says how a ByteSize is written.
const byteSizeWant = "a size like 8g or 512m"

// UnmarshalYAML reads a size with ParseByteSize.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return wrongValue(n, "", byteSizeWant)
	}
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return &valueError{line: n.Line, msg: err.Error()}
	}
	*b = v
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }
