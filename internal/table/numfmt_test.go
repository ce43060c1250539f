package table

import (
	"testing"
	"time"
)

func TestSig(t *testing.T) {
	for _, c := range []struct {
		v    float64
		n    int
		want string
	}{
		{0.000811, 3, "0.000811"}, {0.000802, 3, "0.000802"}, {1.2345, 4, "1.234"},
		{12.3456, 4, "12.35"}, {1374.2, 3, "1374"}, {9.996, 3, "10.0"}, {0.9996, 3, "1.00"}, {0, 3, "0"},
	} {
		if got := Sig(c.v, c.n); got != c.want {
			t.Errorf("Sig(%g, %d) = %q, want %q", c.v, c.n, got, c.want)
		}
	}
}

func TestSpeedup(t *testing.T) {
	for v, want := range map[float64]string{37.665: "37.7x", 1374.4: "1374x", 0.9123: "0.912x", 21.207: "21.2x", 1: "1.00x", 2.412: "2.41x"} {
		if got := Speedup(v); got != want {
			t.Errorf("Speedup(%g) = %q, want %q", v, got, want)
		}
	}
}

func TestUnits(t *testing.T) {
	for _, c := range []struct {
		name string
		got  Unit
		want string
	}{
		{"times of ms", TimeUnit(1.5, 12), "ms"},
		{"sub-µs times", TimeUnit(0.000811, 0.000802), "µs"},
		{"µs times", TimeUnit(0.0123, 0.5), "µs"},
		{"one time of ms sets the column", TimeUnit(0.05, 3), "ms"},
		{"no values", TimeUnit(), "ms"},
		{"GPU compute", FlopsUnit(312, 0.5), "TFLOPS"},
		{"H100 compute", FlopsUnit(312, 45), "TFLOPS"},
		{"CPU compute", FlopsUnit(0.00123, 0.01), "GFLOPS"},
		{"tiny CPU compute", FlopsUnit(0.0000005), "MFLOPS"},
		{"CPU compute below a GFLOPS", FlopsUnit(0.0005), "MFLOPS"},
		{"bandwidth", BandwidthUnit(2500, 800), "GB/s"},
		{"CPU bandwidth", BandwidthUnit(0.04, 12), "GB/s"},
		{"slow CPU bandwidth", BandwidthUnit(0.04, 0.5), "MB/s"},
	} {
		if c.got.Name != c.want {
			t.Errorf("%s: unit %s, want %s", c.name, c.got.Name, c.want)
		}
	}
	if got := TimeUnit(0.000811).Format(0.000811, 3); got != "0.811" {
		t.Errorf("0.000811 ms in µs = %q", got)
	}
}

func TestFixedMS(t *testing.T) {
	for ms, want := range map[float64]string{123.456: "123.5", 5.6789: "5.679", 0.24620799: "0.2462"} {
		if got := FixedMS(ms); got != want {
			t.Errorf("FixedMS(%v) = %q, want %q", ms, got, want)
		}
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		15 * time.Minute: "15m", time.Hour: "1h", 90 * time.Minute: "1h30m", 90 * time.Second: "1m30s",
		time.Hour + time.Second: "1h0m1s", 250 * time.Millisecond: "250ms", 0: "0s", 10 * time.Second: "10s",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestFigures(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Count(725602.4), "725,602"}, {Count(999), "999"}, {Count(1000), "1,000"}, {Count(-1234567), "-1,234,567"},
		{MaxError(0), "0"}, {MaxError(0.0039062), "0.00391"},
		{Percent(87.4), "87%"}, {Percent(4.24), "4.2%"},
		{Change(0.2013), "+20.1%"}, {Change(-0.03), "-3.0%"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 999: "999B", 1234: "1.23kB", 85_300_000: "85.3MB", 1_200_000_000: "1.2GB", 3_000_000_000_000: "3TB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
