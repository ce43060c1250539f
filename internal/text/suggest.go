// Distance and Closest find what a mistyped name was likely meant to be: the
// edit distance between two names, and the nearest of a list when it is
// close enough to be a typo ("did you mean ...?").

package text

// Distance is the Levenshtein distance between a and b (bytes).
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Closest is the name of names nearest to s when it is a likely typo of
// it (at most 2 edits, and fewer than half of s's letters); "" otherwise.
func Closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := Distance(s, n); d < bestD && 2*d < len(s) {
			best, bestD = n, d
		}
	}
	return best
}
