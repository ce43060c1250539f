package timing

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// HostLoadReader takes Samples of one job: the process at its root (the runner)
// and everything under it, on the CPUs that process may use.
type HostLoadReader struct {
	proc, sys string // the /proc and /sys to read (others in tests)
	self      int
	cpus      []int
	now       func() time.Time
	// pids are the job's processes at the last listing, at listed.
	pids   []int
	listed time.Time
}

// listEvery is how often a Read lists every process to find the job's:
// a listing reads the stat file of each process of the machine (2.9 ms
// for 80 of them on the 2-CPU development machine, more on a host with
// hundreds), the reads between them only the job's few.
const listEvery = time.Second

// NewHostLoad returns a Reader of the calling process and its descendants on the
// machine's /proc and /sys, having read one Sample; an error says why
// there is none (not Linux, /proc unreadable).
func NewHostLoad() (*HostLoadReader, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("host load: read from /proc on Linux only, not %s", runtime.GOOS)
	}
	return newReader("/proc", "/sys", os.Getpid(), time.Now)
}

func newReader(proc, sys string, self int, now func() time.Time) (*HostLoadReader, error) {
	b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(self), "status"))
	if err != nil {
		return nil, fmt.Errorf("host load: %w", err)
	}
	cpus, err := allowedCPUs(string(b))
	if err != nil {
		return nil, fmt.Errorf("host load: %w", err)
	}
	r := &HostLoadReader{proc: proc, sys: sys, self: self, cpus: cpus, now: now}
	if _, err := r.Read(); err != nil {
		return nil, err
	}
	return r, nil
}

// Read takes a Sample.
func (r *HostLoadReader) Read() (HostSample, error) {
	s := HostSample{At: r.now(), CPUs: len(r.cpus)}
	b, err := os.ReadFile(filepath.Join(r.proc, "loadavg"))
	if err == nil {
		s.Load1, err = parseLoadavg(string(b))
	}
	if err != nil {
		return HostSample{}, fmt.Errorf("host load: %w", err)
	}
	b, err = os.ReadFile(filepath.Join(r.proc, "stat"))
	if err == nil {
		s.CPU, err = parseStat(string(b), r.cpus)
	}
	if err != nil {
		return HostSample{}, fmt.Errorf("host load: %w", err)
	}
	if s.Job, s.Listed, err = r.job(s.At); err != nil {
		return HostSample{}, fmt.Errorf("host load: %w", err)
	}
	s.MHz = r.mhz()
	return s, nil
}

// job reads the CPU time of the root process and of every process under
// it: the workers, the zygote and whatever they started. It lists every
// process once every listEvery (listed), and reads the processes of the
// last listing in between; a process gone before its reading is left out.
func (r *HostLoadReader) job(now time.Time) (ticks map[int]uint64, listed bool, err error) {
	if r.pids == nil || now.Sub(r.listed) >= listEvery {
		if ticks, err = r.list(); err != nil {
			return nil, false, err
		}
		r.pids, r.listed = r.pids[:0], now
		for pid := range ticks {
			r.pids = append(r.pids, pid)
		}
		return ticks, true, nil
	}
	ticks = map[int]uint64{}
	for _, pid := range r.pids {
		if _, t, err := r.stat(pid); err == nil {
			ticks[pid] = t
		}
	}
	if _, ok := ticks[r.self]; !ok {
		return nil, false, errors.New("the runner's own /proc/<pid>/stat is unreadable")
	}
	return ticks, false, nil
}

// list reads every process's stat and keeps the job's.
func (r *HostLoadReader) list() (map[int]uint64, error) {
	ents, err := os.ReadDir(r.proc)
	if err != nil {
		return nil, err
	}
	parent := map[int]int{}
	ticks := map[int]uint64{}
	for _, e := range ents {
		pid, ok := atoi(e.Name())
		if !ok {
			continue
		}
		if ppid, t, err := r.stat(pid); err == nil {
			parent[pid], ticks[pid] = ppid, t
		}
	}
	if _, ok := ticks[r.self]; !ok {
		return nil, errors.New("the runner's own /proc/<pid>/stat is unreadable")
	}
	return descendants(r.self, parent, ticks), nil
}

func (r *HostLoadReader) stat(pid int) (ppid int, ticks uint64, err error) {
	b, err := os.ReadFile(filepath.Join(r.proc, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, err
	}
	return parseProcStat(string(b))
}

// descendants keeps the ticks of root and of every process whose chain of
// parents leads to it.
func descendants(root int, parent map[int]int, ticks map[int]uint64) map[int]uint64 {
	in := map[int]bool{root: true}
	var under func(pid int, depth int) bool
	under = func(pid int, depth int) bool {
		if v, ok := in[pid]; ok {
			return v
		}
		pp, ok := parent[pid]
		// pid 0 is the kernel's; a chain longer than the process table
		// is a loop of reused pids.
		if !ok || pp == 0 || pp == pid || depth > len(parent) {
			return false
		}
		v := under(pp, depth+1)
		in[pid] = v
		return v
	}
	out := map[int]uint64{}
	for pid, t := range ticks {
		if under(pid, 0) {
			out[pid] = t
		}
	}
	return out
}

// mhz is the mean current clock of the job's CPUs: cpufreq's
// scaling_cur_freq (kHz) where the kernel has a cpufreq driver, else
// /proc/cpuinfo's "cpu MHz"; 0 where neither says (virtual machines
// often have no cpufreq, arm64 no cpu MHz).
func (r *HostLoadReader) mhz() float64 {
	sum, n := 0.0, 0
	for _, c := range r.cpus {
		b, err := os.ReadFile(filepath.Join(r.sys, "devices/system/cpu", "cpu"+strconv.Itoa(c), "cpufreq/scaling_cur_freq"))
		if err != nil {
			continue
		}
		if khz, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil && khz > 0 {
			sum += khz / 1e3
			n++
		}
	}
	if n > 0 {
		return sum / float64(n)
	}
	b, err := os.ReadFile(filepath.Join(r.proc, "cpuinfo"))
	if err != nil {
		return 0
	}
	mhz, _ := cpuinfoMHz(string(b), r.cpus)
	return mhz
}
