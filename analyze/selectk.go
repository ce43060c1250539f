package analyze

// selectKth reorders x so that x[k] is the value a full sort would put
// there, with no larger value before it and no smaller one after it, and
// returns x[k]. It runs in expected linear time (quickselect with a
// median-of-three pivot and three-way partitioning, so runs of equal
// timings, common with coarse timers, stay linear).
func selectKth(x []float64, k int) float64 {
	lo, hi := 0, len(x)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		p := median3(x[lo], x[mid], x[hi])
		// Partition x[lo..hi] into < p, == p, > p.
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch {
			case x[i] < p:
				x[lt], x[i] = x[i], x[lt]
				lt++
				i++
			case x[i] > p:
				x[i], x[gt] = x[gt], x[i]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return x[k]
		}
	}
	return x[k]
}

func median3(a, b, c float64) float64 {
	if a > b {
		a, b = b, a
	}
	if b > c {
		b = c
	}
	if a > b {
		return a
	}
	return b
}
