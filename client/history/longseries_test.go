package history_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/regress"
)

// BenchmarkLongSeries reads one series of 10^5 timings as xrun history
// and regress do: every point judged (WalkFilter), and the last run
// judged against the series (JudgeEach). docs/performance.md ("xrun
// serve under load") has the figures at 10^6 and the profile.
//
//	go test ./client/history -run XXX -bench LongSeries -benchtime 1x -cpuprofile cpu.out
func BenchmarkLongSeries(b *testing.B) {
	path := filepath.Join(b.TempDir(), "h.db")
	last, err := history.LongSeries(path, 100_000)
	if err != nil {
		b.Fatal(err)
	}
	h, err := history.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	b.Run("history", func(b *testing.B) {
		for range b.N {
			n := 0
			err := h.WalkFilter(context.Background(), history.Filter{Experiment: history.LongSeriesExperiment}, regress.Default(), 0,
				func(int, []string) error { return nil }, func(_, shown []history.Judged, _ map[int64]int) error { n += len(shown); return nil })
			if err != nil || n != 100_000 {
				b.Fatalf("%d points judged (%v); want 100000", n, err)
			}
		}
	})
	b.Run("regress", func(b *testing.B) {
		for range b.N {
			n := 0
			if err := h.JudgeEach(last, regress.Default(), func(history.Judged) { n++ }); err != nil || n != 1 {
				b.Fatalf("%d points of the last run judged (%v); want 1", n, err)
			}
		}
	})
}
