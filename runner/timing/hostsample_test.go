package timing

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/internal/testenv"

	"github.com/xrun-dev/xrun/result"
)

// statText is /proc/stat of a 4-CPU machine (the totals line and the
// lines after the CPUs are ignored).
const statText = `cpu  4705 356 584 3699 23 23 0 0 0 0
cpu0 1393 280 286 908 7 11 0 10 0 0
cpu1 1200 20 100 1000 5 2 3 20 0 0
cpu2 1000 50 100 900 5 5 0 0 0 0
cpu3 1112 6 98 891 6 5 0 0 0 0
intr 114930548 113199788 3 0 5 263 0 4 [... 4 more]
ctxt 1990473
btime 1062191376
processes 2915
`

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		name string
		cpus []int
		want CPUTimes
	}{
		// cpu1: busy 1200+20+100+2+3, steal 20, total busy+1000+5+20.
		{"one CPU", []int{1}, CPUTimes{Busy: 1325, Steal: 20, Total: 2350}},
		{"two CPUs", []int{0, 1}, CPUTimes{Busy: 1970 + 1325, Steal: 30, Total: 1970 + 908 + 7 + 10 + 2350}},
		{"every CPU", nil, CPUTimes{Busy: 1970 + 1325 + 1155 + 1221, Steal: 30, Total: 2895 + 2350 + 2060 + 2118}},
		{"an offline CPU adds nothing", []int{1, 9}, CPUTimes{Busy: 1325, Steal: 20, Total: 2350}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseStat(statText, c.cpus)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("parseStat = %+v, want %+v", got, c.want)
			}
		})
	}
	// A kernel older than steal time (2.6.11) prints four to seven fields.
	if got, err := parseStat("cpu0 10 0 5 85\n", nil); err != nil || got != (CPUTimes{Busy: 15, Total: 100}) {
		t.Errorf("short line: %+v, %v", got, err)
	}
	if _, err := parseStat(statText, []int{7}); err == nil {
		t.Error("no line for the set: no error")
	}
	if _, err := parseStat("cpu0 1 x 3 4 5\n", nil); err == nil {
		t.Error("a field that is not a number: no error")
	}
}

func TestParseLoadavg(t *testing.T) {
	if v, err := parseLoadavg("8.21 5.02 2.33 9/412 31337\n"); err != nil || v != 8.21 {
		t.Errorf("parseLoadavg = %v, %v", v, err)
	}
	for _, bad := range []string{"", "load 1 2"} {
		if _, err := parseLoadavg(bad); err == nil {
			t.Errorf("parseLoadavg(%q): no error", bad)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	for _, c := range []struct {
		text        string
		ppid        int
		ticks       uint64
		wantsErrors bool
	}{
		{"12450 (cat) R 12445 12445 8031 0 -1 4194304 100 0 0 0 7 3 0 0 20 0 1 0 39750 3133440 382", 12445, 10, false},
		// A command name with spaces and parentheses.
		{"77 (a (b) c) S 1 77 77 0 -1 4194560 5 0 0 0 120 30 4 2 20 0 3 0 100 0 0", 1, 150, false},
		{"77 (python3) S 1 77", 0, 0, true},
		{"77 python3 S 1 77 77 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 1 0 0", 0, 0, true},
	} {
		ppid, ticks, err := parseProcStat(c.text)
		if (err != nil) != c.wantsErrors || ppid != c.ppid || ticks != c.ticks {
			t.Errorf("parseProcStat(%q) = %d, %d, %v", c.text, ppid, ticks, err)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"0-1", []int{0, 1}},
		{"0-3,8,10-11\n", []int{0, 1, 2, 3, 8, 10, 11}},
		{"5", []int{5}},
	} {
		got, err := parseCPUList(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseCPUList(%q) = %v, %v", c.in, got, err)
		}
	}
	for _, bad := range []string{"", "a-b", "3-1"} {
		if _, err := parseCPUList(bad); err == nil {
			t.Errorf("parseCPUList(%q): no error", bad)
		}
	}
	cpus, err := allowedCPUs("Name:\tcat\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed_list:\t0\n")
	if err != nil || !reflect.DeepEqual(cpus, []int{0, 1}) {
		t.Errorf("allowedCPUs = %v, %v", cpus, err)
	}
}

func TestCPUInfoMHz(t *testing.T) {
	info := "processor\t: 0\nmodel name\t: Xeon\ncpu MHz\t\t: 2400.000\n\n" +
		"processor\t: 1\ncpu MHz\t\t: 3000.500\n\nprocessor\t: 2\ncpu MHz\t\t: 1200.000\n"
	if mhz, ok := cpuinfoMHz(info, []int{0, 1}); !ok || mhz != 2700.25 {
		t.Errorf("cpuinfoMHz(0-1) = %v, %v", mhz, ok)
	}
	if mhz, ok := cpuinfoMHz(info, nil); !ok || mhz != 2200.1666666666665 {
		t.Errorf("cpuinfoMHz(all) = %v, %v", mhz, ok)
	}
	// arm64 prints no clock.
	if _, ok := cpuinfoMHz("processor\t: 0\nBogoMIPS\t: 50.00\n", nil); ok {
		t.Error("cpuinfoMHz without a clock: ok")
	}
}

func TestDescendants(t *testing.T) {
	// 1 init, 10 the runner, 11 and 12 its workers, 13 a worker's child,
	// 20 a neighbour, 30 and 31 a loop of reused pids.
	parent := map[int]int{1: 0, 10: 1, 11: 10, 12: 10, 13: 12, 20: 1, 30: 31, 31: 30}
	ticks := map[int]uint64{1: 5, 10: 100, 11: 200, 12: 300, 13: 40, 20: 9000, 30: 1, 31: 1}
	got := descendants(10, parent, ticks)
	want := map[int]uint64{10: 100, 11: 200, 12: 300, 13: 40}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("descendants = %v, want %v", got, want)
	}
}

// sample is a Sample of a 2-CPU set at second s.
func sample(s float64, busy, steal, total uint64, load, mhz float64, job map[int]uint64) HostSample {
	return HostSample{At: time.Unix(0, 0).Add(time.Duration(s * float64(time.Second))), Load1: load,
		CPU: CPUTimes{Busy: busy, Steal: steal, Total: total}, CPUs: 2, Job: job, Listed: true, MHz: mhz}
}

func TestAccShares(t *testing.T) {
	var a HostLoadAcc
	if a.HostLoad() != nil {
		t.Fatal("an empty Acc has a HostLoad")
	}
	// Two windows of 1 s on 2 CPUs (200 ticks each): the CPUs were busy
	// 150 and 170 ticks, the job used 60 and 70 (its worker 11 started in
	// the second window, worker 12 ended in it and is lost).
	a.Add(sample(0, 1000, 0, 10000, 8.0, 2400, map[int]uint64{10: 5, 12: 100}),
		sample(1, 1150, 2, 10200, 8.4, 2000, map[int]uint64{10: 10, 12: 155}))
	a.Add(sample(2, 1300, 2, 10400, 8.6, 0, map[int]uint64{10: 12, 12: 170}),
		sample(3, 1470, 6, 10600, 9.0, 0, map[int]uint64{10: 12, 11: 70}))
	// A window whose counters did not move is not one.
	a.Add(sample(4, 1470, 6, 10600, 9.0, 0, nil), sample(4.5, 1470, 6, 10600, 9.0, 0, nil))
	got := a.HostLoad()
	want := &result.HostLoad{Windows: 2, WallS: 2, CPUs: 2, Load1: 8.5, MaxLoad1: 9, OthersShare: 0.475,
		JobShare: 0.325, StealShare: 0.015, CPUMHz: 2200}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("HostLoad = %+v\nwant       %+v", got, want)
	}
	// A process first seen after a reading that did not list every
	// process may have started before the window: it is left out.
	var c HostLoadAcc
	before := sample(0, 0, 0, 0, 1, 0, map[int]uint64{10: 5})
	before.Listed = false
	c.Add(before, sample(1, 100, 0, 200, 1, 0, map[int]uint64{10: 25, 11: 500}))
	if h := c.HostLoad(); h.JobShare != 0.1 || h.OthersShare != 0.4 {
		t.Errorf("new process after a partial reading: %+v", h)
	}
	// A job that read a tick more than the CPUs did is all the CPUs' time.
	var b HostLoadAcc
	b.Add(sample(0, 0, 0, 0, 1, 0, map[int]uint64{10: 0}), sample(1, 199, 0, 200, 1, 0, map[int]uint64{10: 200}))
	if h := b.HostLoad(); h.OthersShare != 0 || h.JobShare != 0.995 || h.CPUMHz != 0 {
		t.Errorf("job over the CPUs' ticks: %+v", h)
	}
}

// fakeProc writes a /proc and /sys with the runner (pid 10), a worker
// (11) and a neighbour (20).
func fakeProc(t *testing.T, busy uint64, worker, neighbour uint64, freq bool) (proc, sys string) {
	t.Helper()
	root := t.TempDir()
	proc, sys = filepath.Join(root, "proc"), filepath.Join(root, "sys")
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(proc, "loadavg"), "3.50 2.00 1.00 4/100 99\n")
	write(filepath.Join(proc, "stat"), "cpu  0 0 0 0 0 0 0 0 0 0\n"+
		"cpu0 "+strconv.FormatUint(busy, 10)+" 0 0 1000 0 0 0 0 0 0\n"+
		"cpu1 "+strconv.FormatUint(busy, 10)+" 0 0 1000 0 0 0 0 0 0\n"+
		"cpu2 999999 0 0 0 0 0 0 0 0 0\n")
	write(filepath.Join(proc, "cpuinfo"), "processor\t: 0\ncpu MHz\t\t: 2445.406\n\nprocessor\t: 1\ncpu MHz\t\t: 2445.406\n")
	write(filepath.Join(proc, "10", "status"), "Name:\txrun\nCpus_allowed_list:\t0-1\n")
	stat := func(pid, ppid int, ticks uint64) string {
		return strconv.Itoa(pid) + " (p) S " + strconv.Itoa(ppid) + " 1 1 0 -1 0 0 0 0 0 " + strconv.FormatUint(ticks, 10) + " 0 0 0 20 0 1 0 1 0 0\n"
	}
	write(filepath.Join(proc, "1", "stat"), stat(1, 0, 7))
	write(filepath.Join(proc, "10", "stat"), stat(10, 1, 3))
	write(filepath.Join(proc, "11", "stat"), stat(11, 10, worker))
	write(filepath.Join(proc, "20", "stat"), stat(20, 1, neighbour))
	write(filepath.Join(proc, "self"), "not a pid")
	if freq {
		write(filepath.Join(sys, "devices/system/cpu/cpu0/cpufreq/scaling_cur_freq"), "3000000\n")
		write(filepath.Join(sys, "devices/system/cpu/cpu1/cpufreq/scaling_cur_freq"), "2000000\n")
	}
	return proc, sys
}

func TestReader(t *testing.T) {
	now := time.Unix(100, 0)
	proc, sys := fakeProc(t, 100, 50, 1000, false)
	r, err := newReader(proc, sys, 10, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.CPUs(), []int{0, 1}) {
		t.Errorf("CPUs = %v", r.CPUs())
	}
	s, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	want := HostSample{At: now, Load1: 3.5, CPU: CPUTimes{Busy: 200, Total: 2200}, CPUs: 2, Job: map[int]uint64{10: 3, 11: 50}, MHz: 2445.406}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Read = %+v\nwant   %+v", s, want)
	}
	// Between listings a Read reads the processes of the last one: a new
	// worker shows at the next listing, a second later.
	if err := os.MkdirAll(filepath.Join(proc, "12"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "12", "stat"), []byte("12 (w) S 10 1 1 0 -1 0 0 0 0 0 9 0 0 0 20 0 1 0 1 0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.Read(); s.Listed || len(s.Job) != 2 {
		t.Errorf("Read between listings: %+v", s)
	}
	now = now.Add(listEvery)
	if s, _ := r.Read(); !s.Listed || s.Job[12] != 9 {
		t.Errorf("Read at the next listing: %+v", s)
	}
	// cpufreq, where the kernel has it, comes before /proc/cpuinfo.
	proc, sys = fakeProc(t, 100, 50, 1000, true)
	r, err = newReader(proc, sys, 10, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := r.Read(); err != nil || s.MHz != 2500 {
		t.Errorf("MHz from cpufreq = %v, %v", s.MHz, err)
	}
	// Without the runner's own entry there is no reader.
	if _, err := newReader(proc, sys, 42, time.Now); err == nil {
		t.Error("newReader of a missing pid: no error")
	}
}

// On Linux the machine's own /proc reads: the runner's process is in the
// job, and two readings a moment apart make a window.
func TestNewOnThisMachine(t *testing.T) {
	r, err := NewHostLoad()
	if err != nil {
		if _, statErr := os.Stat("/proc/stat"); statErr != nil {
			testenv.Missing(t, "no /proc here: %v", err)
		}
		t.Fatal(err)
	}
	before, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := before.Job[os.Getpid()]; !ok || len(r.CPUs()) == 0 || before.CPUs != len(r.CPUs()) {
		t.Fatalf("sample %+v, CPUs %v", before, r.CPUs())
	}
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
	}
	after, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	var a HostLoadAcc
	a.Add(before, after)
	h := a.HostLoad()
	if h == nil || h.JobShare <= 0 || h.OthersShare < 0 || h.OthersShare+h.JobShare > 1 {
		t.Errorf("a busy 100 ms: %+v", h)
	}
}

// BenchmarkRead is the cost of one reading of this machine: two a batch.
func BenchmarkRead(b *testing.B) {
	r, err := NewHostLoad()
	if err != nil {
		b.Skip(err)
	}
	for b.Loop() {
		if _, err := r.Read(); err != nil {
			b.Fatal(err)
		}
	}
}

// CPUs are the CPUs the job may run on.
func (r *HostLoadReader) CPUs() []int { return r.cpus }
