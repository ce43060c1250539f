package gpuinfo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/result"
)

var fullFields = []string{
	FieldIndex, FieldName, FieldUUID, FieldComputeCap, FieldMemTotal, FieldDriver,
	FieldSMClock, FieldMemClock, FieldMaxSMClock, FieldPower, FieldPowerLimit, FieldTemperature,
	FieldUtilization, FieldMemUsed, FieldPersistence, FieldReasons,
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseQuery(t *testing.T) {
	withoutCC := slices.DeleteFunc(slices.Clone(fullFields), func(f string) bool { return f == FieldComputeCap })
	for _, c := range []struct {
		file   string
		fields []string
		driver string
		want   []result.GPU
	}{
		{"h100.csv", fullFields, "580.159.04", []result.GPU{{
			Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-2f1a3c4e-8b7d-4e0f-9a61-3c5d7e9f1b2a",
			ComputeCapability: "9.0", MemoryBytes: 81559 << 20, PeakTFLOPS: 989.5, PeakGBps: 3350,
			Before: &result.GPUState{SMClockMHz: 1980, MemClockMHz: 2619, MaxSMClockMHz: 1980, PowerW: 118.42,
				PowerLimitW: 700, TemperatureC: 34, Utilization: 0, MemoryUsedBytes: 1 << 20,
				PersistenceMode: "Enabled", ClockEventReasons: []string{"gpu_idle"}},
		}}},
		{"a100x2.csv", fullFields, "535.129.03", []result.GPU{
			{Index: 0, Name: "NVIDIA A100-SXM4-80GB", UUID: "GPU-0c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f",
				ComputeCapability: "8.0", MemoryBytes: 81920 << 20, PeakTFLOPS: 312, PeakGBps: 2039,
				Before: &result.GPUState{SMClockMHz: 1410, MemClockMHz: 1593, MaxSMClockMHz: 1410, PowerW: 312.5,
					PowerLimitW: 400, TemperatureC: 61, Utilization: 98, MemoryUsedBytes: 40521 << 20,
					PersistenceMode: "Disabled", ClockEventReasons: []string{"sw_power_cap"}}},
			{Index: 1, Name: "NVIDIA A100-SXM4-80GB", UUID: "GPU-1d2e3f4a-5b6c-7d8e-9f0a-1b2c3d4e5f6a",
				ComputeCapability: "8.0", MemoryBytes: 81920 << 20, PeakTFLOPS: 312, PeakGBps: 2039,
				Before: &result.GPUState{SMClockMHz: 210, MemClockMHz: 1593, MaxSMClockMHz: 1410,
					TemperatureC: 30, MemoryUsedBytes: 4 << 20, PersistenceMode: "Disabled", ClockEventReasons: []string{}}},
		}},
		{"t4_old_driver.csv", withoutCC, "470.82.01", []result.GPU{{
			Index: 0, Name: "Tesla T4", UUID: "GPU-9a8b7c6d-5e4f-3a2b-1c0d-9e8f7a6b5c4d",
			MemoryBytes: 15360 << 20, PeakTFLOPS: 65, PeakGBps: 320,
			Before: &result.GPUState{SMClockMHz: 585, MemClockMHz: 5000, MaxSMClockMHz: 1590, PowerW: 27.33,
				PowerLimitW: 70, TemperatureC: 44, PersistenceMode: "Disabled", ClockEventReasons: []string{"gpu_idle"}},
		}}},
	} {
		t.Run(c.file, func(t *testing.T) {
			gpus, driver, err := ParseQuery(c.fields, readFile(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if driver != c.driver {
				t.Errorf("driver = %q, want %q", driver, c.driver)
			}
			if len(gpus) != len(c.want) {
				t.Fatalf("got %d GPUs, want %d", len(gpus), len(c.want))
			}
			for i := range gpus {
				if !reflect.DeepEqual(gpus[i], c.want[i]) {
					t.Errorf("GPU %d = %+v\nbefore %+v\nwant %+v\nbefore %+v", i, gpus[i], gpus[i].Before, c.want[i], c.want[i].Before)
				}
			}
		})
	}
}

func TestParseQueryErrors(t *testing.T) {
	if _, _, err := ParseQuery(fullFields, ""); !errors.Is(err, ErrNoGPU) {
		t.Errorf("empty output: err = %v, want ErrNoGPU", err)
	}
	if _, _, err := ParseQuery(fullFields, "0, NVIDIA H100 80GB HBM3\n"); err == nil {
		t.Error("short row: no error")
	}
	if _, _, err := ParseQuery([]string{FieldIndex, FieldName}, "zero, NVIDIA H100\n"); err == nil {
		t.Error("bad index: no error")
	}
}

func TestParseReasons(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"0x0000000000000000", []string{}},
		{"0x0000000000000001", []string{"gpu_idle"}},
		{"0x0000000000000044", []string{"sw_power_cap", "hw_thermal_slowdown"}},
		{"0x00000000000000A8", []string{"hw_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown"}},
		{"0x0000000000001002", []string{"applications_clocks_setting", "unknown_0x1000"}},
		{"[N/A]", []string{}},
		{"", []string{}},
	} {
		if got := ParseReasons(c.in); !slices.Equal(got, c.want) {
			t.Errorf("ParseReasons(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func fakeSMI(t *testing.T, reject []string, identityOut, stateOut string) {
	t.Helper()
	dir := t.TempDir()
	var sb strings.Builder
	sb.WriteString("#!/bin/sh\nq=\"$1\"\n")
	for _, f := range reject {
		sb.WriteString("case \"$q\" in *'" + f + "'*) echo 'Field \"" + f + "\" is not a valid field to query.'; echo; echo \"$q\" >> \"$0.rejected\"; exit 2;; esac\n")
	}
	sb.WriteString("case \"$q\" in *name*) printf '%s' '" + identityOut + "';; *) printf '%s' '" + stateOut + "';; esac\n")
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(sb.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
}

func TestQueryDropsUnsupportedFields(t *testing.T) {
	fakeSMI(t, []string{"compute_cap", "clocks_event_reasons.active"}, readFile(t, "t4_old_driver.csv"),
		"0, 1590, 5000, 1590, 69.1, 70.00, 71, 100, 9000, Disabled, 0x0000000000000020\n")
	gpus, driver, err := Query(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if driver != "470.82.01" || len(gpus) != 1 || gpus[0].Name != "Tesla T4" || gpus[0].ComputeCapability != "" {
		t.Fatalf("Query = %+v, %q", gpus, driver)
	}
	if !slices.Equal(gpus[0].Before.ClockEventReasons, []string{"gpu_idle"}) {
		t.Errorf("reasons from clocks_throttle_reasons.active = %v", gpus[0].Before.ClockEventReasons)
	}
	st, err := State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after := st[0]
	if after == nil || after.SMClockMHz != 1590 || after.TemperatureC != 71 || !slices.Equal(after.ClockEventReasons, []string{"sw_thermal_slowdown"}) {
		t.Fatalf("State = %+v", after)
	}
	if th, why := analyze.Throttled(gpus[0].Before, after); !th || !strings.Contains(why, "sw_thermal_slowdown") {
		t.Errorf("Throttled = %v, %q", th, why)
	}
}

func TestQueryNoGPU(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, _, err := Query(context.Background()); !errors.Is(err, ErrNoGPU) {
		t.Errorf("no nvidia-smi: err = %v, want ErrNoGPU", err)
	}
	dir := t.TempDir()
	script := "#!/bin/sh\necho 'No devices were found'\nexit 6\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if _, _, err := Query(context.Background()); !errors.Is(err, ErrNoGPU) {
		t.Errorf("no devices: err = %v, want ErrNoGPU", err)
	}
	if _, err := State(context.Background()); !errors.Is(err, ErrNoGPU) {
		t.Errorf("State with no devices: err = %v, want ErrNoGPU", err)
	}
}

// ParseQuery parses the output of a query of fields (canonical names) into
// GPUs and the driver version.
func ParseQuery(fields []string, out string) ([]result.GPU, string, error) {
	rows, err := ParseRows(fields, out)
	if err != nil {
		return nil, "", err
	}
	return gpusFromRows(rows)
}
