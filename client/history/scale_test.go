package history_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/history"
)

func BenchmarkImport(b *testing.B) {
	r := flat.Synthetic(2000, 10, "bench", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 1)
	for i := range b.N {
		h, err := history.Open(filepath.Join(b.TempDir(), "h.db"))
		if err != nil {
			b.Fatal(err)
		}
		_ = i
		if _, err := h.Import(r, history.Source{Origin: "bench"}); err != nil {
			b.Fatal(err)
		}
		h.Close()
	}
}
