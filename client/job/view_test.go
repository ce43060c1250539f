package job

import "testing"

func TestTailLines(t *testing.T) {
	in := []byte("a\nb\nc\n")
	for tail, want := range map[string]string{"all": "a\nb\nc\n", "2": "b\nc\n", "0": "", "9": "a\nb\nc\n"} {
		if got := string(tailLines(in, tail)); got != want {
			t.Errorf("tail %s = %q, want %q", tail, got, want)
		}
	}
}
