package text

import "testing"

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"kitten", "sitting", 3}, {"cpu_swep", "cpu_sweep", 1}, {"same", "same", 0}} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	keys := []string{"timeout", "gpus", "memory"}
	for s, want := range map[string]string{"timout": "timeout", "gpu": "gpus", "xyz": "", "mem": ""} {
		if got := Closest(s, keys); got != want {
			t.Errorf("Closest(%q) = %q, want %q", s, got, want)
		}
	}
}
