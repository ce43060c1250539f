package result

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The figures of a results document are checked by one walk of its Go
// types, which the JSON encoding follows field by field: Decode refuses a
// figure out of bounds (figures), the runner writes one as 0 with a
// warning (Finite). A figure's bound is ±MaxFigure, but in the unbounded
// fields, where it is only finite; the timings' own bounds are
// Timing.check's.

// unbounded are the fields whose figures may be as large as float64 goes
// (the harness clamps an infinite one to ±1.8e308): an implementation's
// correctness figures, whose relative errors over a reference near 0 are
// huge, and the criteria (a max_error criterion's value is one of them),
// the metrics an experiment reports, and the autotuner's records (Triton
// times a config that fails as infinite). No reader does arithmetic on
// them; they are only finite.
var unbounded = map[string]bool{"correctness": true, "criteria": true, "metrics": true, "autotune": true}

// figureWalk is one walk over the figures of a document.
type figureWalk struct {
	// fix sets each figure out of bounds to 0 and goes on; without it the
	// walk stops at the first.
	fix bool
	// named visits maps in key order and keeps the places of the figures
	// out of bounds in found; without it (the quick look that a valid
	// document costs) it only says whether there is one.
	named bool
	at    []place
	found []string
	value float64 // the first figure out of bounds
}

// place is a step into a document: a field or map key, or (index >= 0)
// an element of a list.
type place struct {
	name  string
	index int
}

// stopped says the walk has found what it looks for.
func (w *figureWalk) stopped() bool { return !w.fix && len(w.found) > 0 }

// out records a figure f out of bounds at the current place.
func (w *figureWalk) out(f float64) {
	if len(w.found) == 0 {
		w.value = f
	}
	if !w.named {
		w.found = append(w.found, "")
		return
	}
	var b strings.Builder
	for _, p := range w.at {
		switch {
		case p.index >= 0:
			b.WriteString("[" + strconv.Itoa(p.index) + "]")
		case b.Len() > 0:
			b.WriteString("." + p.name)
		default:
			b.WriteString(p.name)
		}
	}
	w.found = append(w.found, b.String())
}

// enter and leave keep the place of a named walk.
func (w *figureWalk) enter(name string, index int) {
	if w.named {
		w.at = append(w.at, place{name, index})
	}
}

func (w *figureWalk) leave() {
	if w.named {
		w.at = w.at[:len(w.at)-1]
	}
}

// walk visits every figure of v, each within ±limit.
func (w *figureWalk) walk(v reflect.Value, limit float64) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			w.walk(v.Elem(), limit)
		}
	case reflect.Struct:
		for _, f := range fieldsOf(v.Type()) {
			lim := limit
			if f.unbounded {
				if !w.fix {
					// Decoded from JSON, they are finite already.
					continue
				}
				lim = math.MaxFloat64
			}
			if f.inline {
				w.walk(v.Field(f.index), lim)
			} else {
				w.enter(f.name, -1)
				w.walk(v.Field(f.index), lim)
				w.leave()
			}
			if w.stopped() {
				return
			}
		}
	case reflect.Slice, reflect.Array:
		float := v.Type().Elem().Kind() == reflect.Float64 || v.Type().Elem().Kind() == reflect.Float32
		for i := 0; i < v.Len(); i++ {
			// A list of figures (a run's samples) is read without a
			// step per element until one is out of bounds.
			if float && math.Abs(v.Index(i).Float()) <= limit {
				continue
			}
			w.enter("", i)
			w.walk(v.Index(i), limit)
			w.leave()
			if w.stopped() {
				return
			}
		}
	case reflect.Map:
		if !w.named && !w.fix {
			for it := v.MapRange(); it.Next() && !w.stopped(); {
				w.walk(it.Value(), limit)
			}
			return
		}
		keys := v.MapKeys()
		if w.named {
			sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		}
		for _, k := range keys {
			if w.named {
				w.enter(fmt.Sprint(k), -1)
			}
			w.mapValue(v, k, limit)
			w.leave()
			if w.stopped() {
				return
			}
		}
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); !(math.Abs(f) <= limit) {
			w.out(f)
			if w.fix && v.CanSet() {
				v.SetFloat(0)
			}
		}
	}
}

// mapValue walks the value of map m at key k. A map's values cannot be
// set in place: to fix one, a float, or a float or a struct behind an
// interface, is walked on a copy and stored again.
func (w *figureWalk) mapValue(m, k reflect.Value, limit float64) {
	e := m.MapIndex(k)
	if !w.fix {
		w.walk(e, limit)
		return
	}
	inner := e
	if inner.Kind() == reflect.Interface && !inner.IsNil() {
		inner = inner.Elem()
	}
	switch inner.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := inner.Float(); !(math.Abs(f) <= limit) {
			w.out(f)
			m.SetMapIndex(k, reflect.Zero(inner.Type()).Convert(e.Type()))
		}
	case reflect.Struct, reflect.Array:
		c := reflect.New(inner.Type()).Elem()
		c.Set(inner)
		n := len(w.found)
		w.walk(c, limit)
		if len(w.found) > n {
			m.SetMapIndex(k, c.Convert(e.Type()))
		}
	default:
		w.walk(e, limit)
	}
}

// field is how a walk steps into a struct's field: by its JSON name, or
// inline for an embedded struct without one.
type field struct {
	index     int
	name      string
	inline    bool
	unbounded bool
}

// fieldPlans holds fieldsOf's answer per struct type.
var fieldPlans sync.Map // reflect.Type -> []field

// fieldsOf lists the fields of struct type t that JSON encodes.
func fieldsOf(t reflect.Type) []field {
	if p, ok := fieldPlans.Load(t); ok {
		return p.([]field)
	}
	var fs []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		switch {
		case name == "-":
			continue
		case f.Anonymous && name == "":
			fs = append(fs, field{index: i, inline: true})
			continue
		case name == "":
			name = f.Name
		}
		fs = append(fs, field{index: i, name: name, unbounded: unbounded[name]})
	}
	fieldPlans.Store(t, fs)
	return fs
}

// figures refuses a figure of v (at path) beyond ±MaxFigure. It looks
// for one first without naming places (a run at the case cap has
// millions of figures, and naming each took a quarter of reading the
// file), then names the first it finds.
func figures(v reflect.Value, path string) error {
	quick := figureWalk{}
	quick.walk(v, MaxFigure)
	if len(quick.found) == 0 {
		return nil
	}
	w := figureWalk{named: true}
	if path != "" {
		w.enter(path, -1)
	}
	w.walk(v, MaxFigure)
	return fmt.Errorf("%s is %g, beyond the ±%g a figure of a results file may be", w.found[0], w.value, MaxFigure)
}

// Finite replaces every figure of r that is not a finite number (NaN,
// +Inf, -Inf, which JSON cannot hold) or is beyond ±MaxFigure (which
// Decode refuses) by 0, and returns where each was,
// as a path into the document ("cases[0].results.fast.throughput.tflops").
// The runner's samples are bounded (runner/timing), so a non-finite figure
// is arithmetic on extreme work models or a defect: one such figure must
// cost that figure, not every implementation's results.
func (r *Results) Finite() []string {
	w := figureWalk{fix: true, named: true}
	w.walk(reflect.ValueOf(r), MaxFigure)
	return w.found
}
