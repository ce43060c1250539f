package result

import (
	"reflect"
	"testing"
)

// BenchmarkFigures is Decode's check of the figures of a run of 20,000
// cases: the quick walk a valid document costs.
func BenchmarkFigures(b *testing.B) {
	r := full()
	c := r.Cases[0]
	for len(r.Cases) < 20000 {
		r.Cases = append(r.Cases, c)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := figures(reflect.ValueOf(r), ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFinite is the runner's pass over the same run before it writes
// results.json.
func BenchmarkFinite(b *testing.B) {
	r := full()
	c := r.Cases[0]
	for len(r.Cases) < 20000 {
		r.Cases = append(r.Cases, c)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.Finite()
	}
}
