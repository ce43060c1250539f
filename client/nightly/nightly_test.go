package nightly

import (
	"errors"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/contract"
)

func TestQueryFilter(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	f, err := Query{Experiment: "gla", Cases: []string{"T=1024", "chunk=256"}, Since: "30d"}.Filter(now)
	if err != nil {
		t.Fatal(err)
	}
	if f.Experiment != "gla" || f.Case["T"] != "1024" || f.Case["chunk"] != "256" || !f.Since.Equal(now.Add(-30*24*time.Hour)) {
		t.Errorf("filter %+v", f)
	}
	for since, want := range map[string]time.Time{
		"2026-11-01":           time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		"2026-11-01T08:00:00Z": time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC),
		"12h":                  now.Add(-12 * time.Hour),
		"":                     {},
	} {
		f, err := Query{Since: since}.Filter(now)
		if err != nil || !f.Since.Equal(want) {
			t.Errorf("since %q: %v, %v; want %v", since, f.Since, err, want)
		}
	}
	for _, q := range []Query{{Cases: []string{"T"}}, {Cases: []string{"=4"}}, {Since: "yesterday"}, {Since: "-3d"}} {
		_, err := q.Filter(now)
		var ee *contract.ExitError
		if !errors.As(err, &ee) || ee.Code != contract.ExitUsage {
			t.Errorf("%+v: %v, want a usage error", q, err)
		}
	}
}
