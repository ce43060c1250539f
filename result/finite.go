package result

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// WarnNonFinite is the kind of the warning that figures were not finite
// numbers within ±MaxFigure (NaN, ±Inf, 1e300) and were written as 0.
const WarnNonFinite = "non_finite"

// Finite replaces every figure of r that is not a finite number (NaN,
// +Inf, -Inf, which JSON cannot hold) or is beyond ±MaxFigure (which
// Decode refuses) by 0, and returns where each was,
// as a path into the document ("cases[0].results.fast.throughput.tflops").
// The runner's samples are bounded (runner/timing), so a non-finite figure
// is arithmetic on extreme work models or a defect: one such figure must
// cost that figure, not every implementation's results.
func (r *Results) Finite() []string {
	var paths []string
	finite(reflect.ValueOf(r), "", MaxFigure, &paths)
	return paths
}

// unbounded are the fields whose figures may be as large as float64 goes
// (the harness clamps an infinite one to ±1.8e308): an implementation's
// correctness figures, whose relative errors over a reference near 0 are
// huge, and the criteria (a max_error criterion's value is one of them),
// the metrics an experiment reports, and the autotuner's records (Triton
// times a config that fails as infinite). No reader does arithmetic on
// them; they are only finite.
var unbounded = map[string]bool{"correctness": true, "criteria": true, "metrics": true, "autotune": true}

func finite(v reflect.Value, path string, limit float64, paths *[]string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			finite(v.Elem(), path, limit, paths)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			switch {
			case name == "-":
				continue
			case f.Anonymous && name == "":
				finite(v.Field(i), path, limit, paths)
				continue
			case name == "":
				name = f.Name
			}
			lim := limit
			if unbounded[name] {
				lim = math.MaxFloat64
			}
			finite(v.Field(i), join(path, name), lim, paths)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			finite(v.Index(i), path+"["+strconv.Itoa(i)+"]", limit, paths)
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			e := v.MapIndex(k)
			p := join(path, fmt.Sprint(k))
			// A map's values cannot be set in place: a float, or a float
			// or a struct behind an interface, is checked on a copy and
			// stored again.
			inner := e
			if inner.Kind() == reflect.Interface && !inner.IsNil() {
				inner = inner.Elem()
			}
			switch inner.Kind() {
			case reflect.Float32, reflect.Float64:
				if f := inner.Float(); !(math.Abs(f) <= limit) {
					*paths = append(*paths, p)
					v.SetMapIndex(k, reflect.Zero(inner.Type()).Convert(e.Type()))
				}
			case reflect.Struct, reflect.Array:
				c := reflect.New(inner.Type()).Elem()
				c.Set(inner)
				n := len(*paths)
				finite(c, p, limit, paths)
				if len(*paths) > n {
					v.SetMapIndex(k, c.Convert(e.Type()))
				}
			default:
				finite(e, p, limit, paths)
			}
		}
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); !(math.Abs(f) <= limit) {
			*paths = append(*paths, path)
			if v.CanSet() {
				v.SetFloat(0)
			}
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// keepFinite makes r encodable, recording what it changed as a warning.
func (r *Results) keepFinite() {
	paths := r.Finite()
	if len(paths) == 0 {
		return
	}
	shown := paths
	if len(shown) > 5 {
		shown = shown[:5]
	}
	more := ""
	if len(paths) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(paths)-len(shown))
	}
	r.Warnings = append(r.Warnings, Warning{Kind: WarnNonFinite,
		Message: fmt.Sprintf("%d figures were not finite numbers within ±%g and are written as 0: %s%s", len(paths), MaxFigure, strings.Join(shown, ", "), more)})
}
