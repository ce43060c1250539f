package timing

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// parseLoadavg returns the 1-minute load average of /proc/loadavg
// ("8.21 5.02 2.33 9/412 31337").
func parseLoadavg(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, errors.New("loadavg: empty")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("loadavg: %w", err)
	}
	return v, nil
}

// parseStat sums the times of the CPUs in cpus (all of them when cpus is
// empty) from /proc/stat's per-CPU lines: "cpuN user nice system idle
// iowait irq softirq steal guest guest_nice". A CPU of the set without a
// line (offline) adds nothing; none at all is an error.
func parseStat(s string, cpus []int) (CPUTimes, error) {
	want := map[int]bool{}
	for _, c := range cpus {
		want[c] = true
	}
	var t CPUTimes
	found := 0
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil || len(want) > 0 && !want[n] {
			continue
		}
		var v [8]uint64 // user nice system idle iowait irq softirq steal; older kernels stop earlier
		for i := 0; i < len(v) && i+1 < len(f); i++ {
			if v[i], err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
				return CPUTimes{}, fmt.Errorf("stat: %s: %w", f[0], err)
			}
		}
		user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
		t.Busy += user + nice + system + irq + softirq
		t.Steal += steal
		t.Total += user + nice + system + idle + iowait + irq + softirq + steal
		found++
	}
	if found == 0 {
		return CPUTimes{}, fmt.Errorf("stat: no line for CPUs %v", cpus)
	}
	return t, nil
}

// parseProcStat reads a process's /proc/<pid>/stat: its parent and the
// CPU time it used (user + system, its threads included, its waited-for
// children not). The command name, in parentheses, may hold spaces and
// parentheses itself: the fields are counted from the last ')'.
func parseProcStat(s string) (ppid int, ticks uint64, err error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, errors.New("pid stat: no command name")
	}
	// From field 3 (state) on: ppid is field 4, utime 14, stime 15.
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, 0, errors.New("pid stat: too few fields")
	}
	if ppid, err = strconv.Atoi(f[1]); err != nil {
		return 0, 0, fmt.Errorf("pid stat: ppid: %w", err)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("pid stat: cpu time: %w", err)
	}
	return ppid, utime + stime, nil
}

// parseCPUList reads a CPU list such as "0-3,8,10-11" (the kernel's
// Cpus_allowed_list, cpuset.cpus).
func parseCPUList(s string) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cpu list %q: empty", s)
	}
	return out, nil
}

// allowedCPUs reads the Cpus_allowed_list line of /proc/<pid>/status: the
// CPUs the process may run on (its affinity, within its cpuset cgroup).
func allowedCPUs(status string) ([]int, error) {
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == "Cpus_allowed_list" {
			return parseCPUList(v)
		}
	}
	return nil, errors.New("status: no Cpus_allowed_list")
}

// cpuinfoMHz is the mean "cpu MHz" of /proc/cpuinfo over the CPUs in cpus
// (all when empty); ok is false where no CPU of the set has one (arm64
// kernels print none).
func cpuinfoMHz(s string, cpus []int) (mhz float64, ok bool) {
	want := map[int]bool{}
	for _, c := range cpus {
		want[c] = true
	}
	cpu, sum, n := -1, 0.0, 0
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, found := strings.Cut(sc.Text(), ":")
		if !found {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			if cpu, found = atoi(v); !found {
				cpu = -1
			}
		case "cpu MHz":
			f, err := strconv.ParseFloat(v, 64)
			if err == nil && f > 0 && cpu >= 0 && (len(want) == 0 || want[cpu]) {
				sum += f
				n++
			}
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

func atoi(s string) (int, bool) {
	v, err := strconv.Atoi(s)
	return v, err == nil
}
