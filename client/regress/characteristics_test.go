package regress

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// The rule's operating characteristics on synthetic nightly series, the
// evidence behind its numbers (docs/regressions.md quotes this test's log:
// go test ./client/regress -run Characteristics -v).
//
// Each series is 30 nights of history and then 100 nights to judge, with
// log-normal night-to-night noise of sigma, and with probability outlier a
// night 10 % slow that reverts (a busy host, a clock that dropped). A
// false alarm is a series with at least one regressed night. A step of s
// from night 31 on is detected when a night within the first 5 of the
// step is regressed; the delay is the night of the first regressed.

type charRow struct {
	rule                 Rule
	sigma, outlier, step float64
	alarms, detected     float64 // fraction of series
	delay                float64 // mean nights to the first regressed, detected series only
	suspectPerNight      float64
}

func simulate(ru Rule, sigma, outlier, step float64, runs int, seed uint64) charRow {
	rng := rand.New(rand.NewPCG(seed, 7))
	row := charRow{rule: ru, sigma: sigma, outlier: outlier, step: step}
	const hist, judged = 30, 100
	delays, detected, suspects := 0.0, 0, 0
	for r := 0; r < runs; r++ {
		meds := noisy(rng, hist+judged, 1.0, sigma)
		for i := range meds {
			if i >= hist && step != 0 {
				meds[i] *= 1 + step
			}
			if rng.Float64() < outlier {
				meds[i] *= 1.10
			}
		}
		vs := ru.Walk(series(meds...))
		first := -1
		for i := hist; i < len(vs); i++ {
			if vs[i].Status == Suspect {
				suspects++
			}
			if vs[i].Status == Regressed && first < 0 {
				first = i - hist
			}
		}
		if step == 0 {
			if first >= 0 {
				row.alarms++
			}
			continue
		}
		if first >= 0 && first < 5 {
			detected++
			delays += float64(first + 1)
		}
	}
	row.alarms /= float64(runs)
	row.detected = float64(detected) / float64(runs)
	if detected > 0 {
		row.delay = delays / float64(detected)
	}
	row.suspectPerNight = float64(suspects) / float64(runs*judged)
	return row
}

func TestCharacteristics(t *testing.T) {
	runs := 2000
	if testing.Short() {
		runs = 200
	}
	def := Default()
	variants := []struct {
		name string
		rule Rule
	}{
		{"default (N=20, r>4, 5%)", def},
		{"no floor (N=20, r>4)", Rule{Window: 20, MinHistory: 10, Score: 4, Floor: 0}},
		{"r>3, 5%", Rule{Window: 20, MinHistory: 10, Score: 3, Floor: 0.05}},
		{"3% floor", Rule{Window: 20, MinHistory: 10, Score: 4, Floor: 0.03}},
		{"N=10", Rule{Window: 10, MinHistory: 10, Score: 4, Floor: 0.05}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-26s %6s %8s | %-12s | %s\n", "rule", "noise", "outliers", "false alarms", "detected within 5 nights (mean delay) for a step of +3% +5% +7% +10% +20%")
	for _, v := range variants {
		for _, noise := range []struct{ sigma, outlier float64 }{{0.005, 0}, {0.01, 0}, {0.01, 0.05}, {0.02, 0}, {0.03, 0}} {
			fa := simulate(v.rule, noise.sigma, noise.outlier, 0, runs, 1)
			fmt.Fprintf(&b, "%-26s %5.1f%% %7.0f%% | %11.1f%% |", v.name, 100*noise.sigma, 100*noise.outlier, 100*fa.alarms)
			for _, step := range []float64{0.03, 0.05, 0.07, 0.10, 0.20} {
				d := simulate(v.rule, noise.sigma, noise.outlier, step, runs/4, 2)
				fmt.Fprintf(&b, " %5.1f%% (%.1f)", 100*d.detected, d.delay)
			}
			b.WriteString("\n")
			// What the default must do, whatever the seed.
			if v.rule == def && noise.sigma <= 0.01 && noise.outlier == 0 && fa.alarms > 0.002 {
				t.Errorf("default rule at %.1f%% noise, %.0f%% outliers: %.2f%% of series raise a false alarm", 100*noise.sigma, 100*noise.outlier, 100*fa.alarms)
			}
		}
	}
	if d := simulate(def, 0.01, 0, 0.10, runs, 3); d.detected < 0.99 || d.delay > 2.05 {
		t.Errorf("default rule misses a 10%% step at 1%% noise: detected %.3f, delay %.2f", d.detected, d.delay)
	}
	if d := simulate(def, 0.01, 0, 0.03, runs, 3); d.detected > 0.01 {
		t.Errorf("default rule flags a 3%% step, below its floor: %.3f", d.detected)
	}
	t.Log(b.String())
}
