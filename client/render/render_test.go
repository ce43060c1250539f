package render

import (
	"testing"
	"time"
)

func TestAgo(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{time.Second, "1 second ago"}, {30 * time.Second, "30 seconds ago"}, {61 * time.Second, "1 minute ago"},
		{150 * time.Minute, "2 hours ago"}, {time.Hour, "1 hour ago"}, {72 * time.Hour, "3 days ago"}} {
		if got := Ago(now.Add(-c.d), now); got != c.want {
			t.Errorf("Ago(%s) = %q, want %q", c.d, got, c.want)
		}
	}
	if got := Ago(time.Time{}, now); got != "-" {
		t.Errorf("zero time: %q", got)
	}
}
