package flat_test

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/flat"
)

// within fails t when f takes longer than d (a quadratic step at this
// size takes minutes; the linear one well under a second).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); f() }()
	select {
	case <-done:
		t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
	case <-time.After(d):
		t.Fatalf("%s took more than %v: flattening is not linear in the cases", what, d)
	}
}

// A run of 4000 cases of 10 implementations and the reference flattens
// and writes as CSV in seconds at most. Each row used to scan every
// comparison of the run (40 s at this size, 271 s at the case cap).
func TestRowsScaleLinearly(t *testing.T) {
	r := flat.Synthetic(4000, 10, "scale", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 1)
	var rows []flat.Row
	within(t, 10*time.Second, "flatten 44000 rows", func() {
		rows = flat.Rows(r)
		if err := flat.WriteCSV(io.Discard, rows); err != nil {
			t.Error(err)
		}
	})
	if len(rows) != 4000*11 {
		t.Fatalf("%d rows, want %d", len(rows), 4000*11)
	}
	for _, row := range rows[:11] {
		switch row.Implementation {
		case r.Baseline, "reference":
			if row.Speedup != 0 {
				t.Errorf("%s has a speedup %v", row.Implementation, row.Speedup)
			}
		default:
			if row.Speedup == 0 || row.Verdict == "" {
				t.Errorf("%s: no speedup or verdict: %+v", row.Implementation, row)
			}
		}
	}
}

func BenchmarkRowsCSV(b *testing.B) {
	r := flat.Synthetic(2000, 10, "bench", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 1)
	b.ResetTimer()
	for range b.N {
		if err := flat.WriteCSV(io.Discard, flat.Rows(r)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead reads a run at the case cap (10,000 cases of 10
// implementations and the reference, 150 MB of JSON) case by case.
func BenchmarkRead(b *testing.B) {
	r := flat.Synthetic(10000, 10, "bench", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 1)
	data, err := json.Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		if _, rows, err := flat.Read(bytes.NewReader(data)); err != nil || len(rows) != 10000*11 {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
	}
}
