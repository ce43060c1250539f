// How figures read in xrun's tables: significant digits
// rather than fixed decimals (0.000811 and 0.000802 ms stay apart), one
// unit per column picked from the column's values (no GFLOPS beside TFLOPS,
// no TFLOPS 0.00 on a CPU), and one form each of a speedup, a share of a
// peak, a change against a baseline, a count, an error and a size.

package table

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Sig writes v with n significant digits in plain notation; digits left of
// the point are all kept (1374, not 1.37e+03).
func Sig(v float64, n int) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	mag := int(math.Floor(math.Log10(math.Abs(v))))
	dec := n - 1 - mag
	if dec < 0 {
		dec = 0
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	// Rounding can carry into a new digit (9.996 -> 10.00): drop the extra one.
	if r, err := strconv.ParseFloat(s, 64); err == nil && dec > 0 && math.Abs(r) >= math.Pow(10, float64(mag+1)) {
		s = strconv.FormatFloat(v, 'f', dec-1, 64)
	}
	return s
}

// Count writes a rate (tokens/s) as a whole number with thousands
// separators: 725,602.
func Count(v float64) string {
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Percent writes a share given in percent (of a GPU's peak): whole from
// 10 %, one decimal below: 87%, 4.2%.
func Percent(pct float64) string {
	if pct >= 10 {
		return strconv.FormatFloat(pct, 'f', 0, 64) + "%"
	}
	return strconv.FormatFloat(pct, 'f', 1, 64) + "%"
}

// Change writes a relative change (0.201 for 20.1 % slower) signed, with
// one decimal: +20.1%, -3.0%.
func Change(ratio float64) string { return fmt.Sprintf("%+.1f%%", 100*ratio) }

// MaxError writes a correctness error (max abs error) with three
// significant digits: 0.00391, 0.
func MaxError(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }

// Bytes writes a size as docker does: "1.2GB", "85.3MB".
func Bytes(n int64) string {
	f := float64(n)
	for _, u := range []string{"B", "kB", "MB", "GB"} {
		if f < 1000 {
			return fmt.Sprintf("%.3g%s", f, u)
		}
		f /= 1000
	}
	return fmt.Sprintf("%.3gTB", f)
}

// Speedup writes a ratio with three significant digits and an x: 37.7x,
// 1374x, 0.912x.
func Speedup(v float64) string { return Sig(v, 3) + "x" }

// Unit is a column's unit: its name and what one of it is in the column's
// base unit (milliseconds for times, TFLOPS for compute, GB/s for memory).
type Unit struct {
	Name  string
	Scale float64
}

// Format writes v (in the base unit) in u with digits significant digits.
func (u Unit) Format(v float64, digits int) string { return Sig(v/u.Scale, digits) }

var (
	timeUnits  = []Unit{{"ms", 1}, {"µs", 1e-3}}
	flopsUnits = []Unit{{"TFLOPS", 1}, {"GFLOPS", 1e-3}, {"MFLOPS", 1e-6}}
	bwUnits    = []Unit{{"GB/s", 1}, {"MB/s", 1e-3}}
)

// TimeUnit picks ms or µs for a column of times in milliseconds (ms is how
// results.json and the criteria speak; µs where every time is below 1 ms).
func TimeUnit(ms ...float64) Unit { return pick(timeUnits, ms) }

// FlopsUnit picks TFLOPS, GFLOPS or MFLOPS for a column of TFLOPS values.
func FlopsUnit(tflops ...float64) Unit { return pick(flopsUnits, tflops) }

// BandwidthUnit picks GB/s or MB/s for a column of GB/s values (peaks are
// quoted in GB/s, so TB/s is never picked).
func BandwidthUnit(gbps ...float64) Unit { return pick(bwUnits, gbps) }

// pick returns the largest of units (largest first) in which the largest
// value is at least 1, else the smallest unit: the column's big values read
// as plain numbers and its small ones keep their significant digits.
func pick(units []Unit, vals []float64) Unit {
	most := 0.0
	for _, v := range vals {
		most = math.Max(most, v)
	}
	if most <= 0 {
		return units[0]
	}
	for _, u := range units {
		if most/u.Scale >= 1 {
			return u
		}
	}
	return units[len(units)-1]
}

// FixedMS writes a time in milliseconds with fixed decimals, as the history
// and regression tables show a series: one decimal from 100 ms, three from
// 1 ms, four below.
func FixedMS(ms float64) string {
	switch {
	case ms >= 100:
		return strconv.FormatFloat(ms, 'f', 1, 64)
	case ms >= 1:
		return strconv.FormatFloat(ms, 'f', 3, 64)
	}
	return strconv.FormatFloat(ms, 'f', 4, 64)
}

// Duration is d as a person writes it: "15m", "1h", "1h30m", "90ms", where
// time.Duration's String says "15m0s" and "1h0m0s".
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
