package regress

import (
	"math"
	"sort"
)

// exactLimit is the largest sample size per side for which MannWhitney
// counts the exact null distribution of U (when there are no ties).
const exactLimit = 20

// MannWhitney returns the two-sided p-value of the Mann-Whitney U test
// (Wilcoxon rank-sum) of a against b: the probability, if both were drawn
// from one distribution, of a rank sum at least as far from its mean. It
// is exact for samples of up to 20 each without ties, else the normal
// approximation with the tie correction and a continuity correction. ok is
// false when either side has fewer than 3 values.
func MannWhitney(a, b []float64) (p float64, ok bool) {
	n1, n2 := len(a), len(b)
	if n1 < 3 || n2 < 3 {
		return 0, false
	}
	type obs struct {
		v     float64
		fromA bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range a {
		all = append(all, obs{v, true})
	}
	for _, v := range b {
		all = append(all, obs{v, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	// Mid-ranks for ties; tieTerm is sum(t^3 - t) over tie groups.
	rankA, tieTerm := 0.0, 0.0
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		mid := float64(i+j+1) / 2 // ranks i+1..j
		for k := i; k < j; k++ {
			if all[k].fromA {
				rankA += mid
			}
		}
		if t := float64(j - i); t > 1 {
			tieTerm += t*t*t - t
		}
		i = j
	}
	f1, f2 := float64(n1), float64(n2)
	u := rankA - f1*(f1+1)/2
	mean := f1 * f2 / 2
	if tieTerm == 0 && n1 <= exactLimit && n2 <= exactLimit {
		return exactP(n1, n2, u), true
	}
	n := f1 + f2
	variance := f1 * f2 / 12 * ((n + 1) - tieTerm/(n*(n-1)))
	if variance <= 0 {
		return 1, true // every value tied: no evidence either way
	}
	d := math.Abs(u-mean) - 0.5
	if d < 0 {
		d = 0
	}
	return math.Min(1, math.Erfc(d/math.Sqrt(2*variance))), true
}

// exactP is the two-sided exact p-value of U = u for samples of n1 and n2
// without ties: twice the smaller tail, at most 1.
func exactP(n1, n2 int, u float64) float64 {
	// counts[k] is the number of arrangements with U = k, built up one
	// observation at a time: c(i, j, k) = c(i-1, j, k-j) + c(i, j-1, k).
	maxU := n1 * n2
	prev := make([][]float64, n2+1) // prev[j] = c(i-1, j, .)
	for j := range prev {
		prev[j] = make([]float64, maxU+1)
		prev[j][0] = 1 // c(0, j, 0) = 1
	}
	for i := 1; i <= n1; i++ {
		cur := make([][]float64, n2+1)
		cur[0] = make([]float64, maxU+1)
		cur[0][0] = 1 // c(i, 0, 0) = 1
		for j := 1; j <= n2; j++ {
			cur[j] = make([]float64, maxU+1)
			for k := 0; k <= i*j; k++ {
				v := cur[j-1][k]
				if k >= j {
					v += prev[j][k-j]
				}
				cur[j][k] = v
			}
		}
		prev = cur
	}
	counts := prev[n2]
	total := 0.0
	for _, c := range counts {
		total += c
	}
	k := int(math.Round(u))
	lower, upper := 0.0, 0.0
	for x := 0; x <= maxU; x++ {
		if x <= k {
			lower += counts[x]
		}
		if x >= k {
			upper += counts[x]
		}
	}
	return math.Min(1, 2*math.Min(lower, upper)/total)
}
