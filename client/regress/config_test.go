package regress

import (
	"testing"
	"time"
)

// A breach whose autotuned kernel ran another config than the baseline's
// latest run says so; a stable value, or one with the same config, does not.
func TestConfigChangeOnABreach(t *testing.T) {
	big, small := "matmul_kernel 128x256x64/w8/s3", "matmul_kernel 128x64x32/w4/s4"
	var vals []Value
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 12; i++ {
		vals = append(vals, Value{Run: "n" + string(rune('a'+i)), At: at.AddDate(0, 0, i), MedianMS: 1.46 + 0.001*float64(i%3), Config: big})
	}
	vals = append(vals,
		Value{Run: "slow", At: at.AddDate(0, 0, 12), MedianMS: 2.67, Config: small},
		Value{Run: "again", At: at.AddDate(0, 0, 13), MedianMS: 2.68, Config: small},
		Value{Run: "fixed", At: at.AddDate(0, 0, 14), MedianMS: 1.461, Config: big},
		Value{Run: "slow-same-config", At: at.AddDate(0, 0, 15), MedianMS: 1.9, Config: big})
	vs := Default().Walk(vals)
	want := "config changed: matmul_kernel 128x256x64/w8/s3 → 128x64x32/w4/s4"
	for i, w := range map[int]string{12: want, 13: want, 14: "", 15: ""} {
		if vs[i].ConfigChange != w {
			t.Errorf("%s: %s, config change %q, want %q", vals[i].Run, vs[i].Status, vs[i].ConfigChange, w)
		}
	}
	if vs[12].Status != Regressed || vs[15].Status != Suspect {
		t.Errorf("statuses %s, %s", vs[12].Status, vs[15].Status)
	}
}
