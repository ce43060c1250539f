package nightly

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/history"
)

// A history of more series than SQLite takes variables in a statement
// (32766) reads as a table, CSV and JSON, and regress judges its run: the
// readers named every series in an IN list, and failed ("too many SQL
// variables") after holding every point in memory.
func TestShowManySeries(t *testing.T) {
	const cases, impls = 3300, 9 // 33000 series with the reference
	h, err := Open(filepath.Join(t.TempDir(), "history.db"), io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range 2 {
		r := flat.Synthetic(cases, impls, "many"+string(rune('a'+i)), at.Add(time.Duration(i)*24*time.Hour), uint64(i))
		if _, err := h.Store().Import(r, history.Source{Origin: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	h.Out = &out
	for _, o := range []ShowOptions{{CSV: true}, {JSON: true}, {}} {
		out.Reset()
		o.Rule = DefaultRule()
		if err := h.Show(o); err != nil {
			t.Fatalf("show %+v: %v", o, err)
		}
		switch {
		case o.CSV:
			if n := strings.Count(out.String(), "\n"); n != 1+2*cases*(impls+1) {
				t.Errorf("CSV: %d lines, want %d", n, 1+2*cases*(impls+1))
			}
		case o.JSON:
			var series []seriesJSON
			if err := json.Unmarshal(out.Bytes(), &series); err != nil || len(series) != cases*(impls+1) || len(series[0].Points) != 2 {
				t.Errorf("JSON: %d series, %v", len(series), err)
			}
		default:
			if n := strings.Count(out.String(), "\nseries "); n != cases*(impls+1)-1 {
				t.Errorf("table: %d series", n+1)
			}
		}
	}
	judged, err := h.Store().Judge("manyb", DefaultRule())
	if err != nil || len(judged) != cases*(impls+1) {
		t.Errorf("Judge: %d points, %v", len(judged), err)
	}
}
