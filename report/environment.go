package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/xrun-dev/xrun/result"
)

// environment is the markdown report's "Environment" section: each GPU
// with its clocks, the CPU, the host's load, the container, the image and
// the software, and where the code came from.
func (m *mdWriter) environment(r *result.Results) {
	m.printf("## Environment\n\n")
	e := r.Env
	for _, g := range e.GPUs {
		var facts []string
		if g.ComputeCapability != "" {
			facts = append(facts, "compute capability "+g.ComputeCapability)
		}
		if g.SMCount > 0 {
			facts = append(facts, strconv.Itoa(g.SMCount)+" SMs")
		}
		if g.MemoryBytes > 0 {
			facts = append(facts, fmt.Sprintf("%.0f GiB", float64(g.MemoryBytes)/(1<<30)))
		}
		if g.L2Bytes > 0 {
			facts = append(facts, fmt.Sprintf("%.0f MiB L2", float64(g.L2Bytes)/(1<<20)))
		}
		line := fmt.Sprintf("- **GPU %d**: %s", g.Index, g.Name)
		if len(facts) > 0 {
			line += " (" + strings.Join(facts, ", ") + ")"
		}
		m.printf("%s\n", line)
		if s := clocks(g); s != "" {
			m.printf("  - clocks: %s\n", s)
		}
		if s := during(g.During); s != "" {
			m.printf("  - while timing: %s\n", s)
		}
	}
	for _, kv := range [][2]string{
		{"Driver", e.Driver}, {"CUDA runtime", e.CUDARuntime}, {"Python", e.Python}, {"torch", e.Torch},
		{"triton", e.Triton}, {"numpy", e.Numpy}, {"CPU", e.CPU}, {"Host", hostLine(e)}, {"Container", containerLine(e.Container)},
		{"Host load while timing", hostLoadLine(e.HostLoad)},
		{"Image", imageLine(r.Image)}, {"Runner", r.RunnerVersion}, {"Client", r.ClientVersion}, {"Git commit", gitLine(e)},
	} {
		if kv[1] != "" {
			m.printf("- **%s**: %s\n", kv[0], kv[1])
		}
	}
	m.printf("\n")
}

// hostLoadLine says how busy the host was while the timings were taken,
// "" when it was not read.
func hostLoadLine(h *result.HostLoadSummary) string {
	if h == nil {
		return ""
	}
	s := fmt.Sprintf("other processes used %.0f %% of the %d CPUs (median over %d timings), %.0f %% at most; load average up to %.1f",
		100*h.MedianOthersShare, h.CPUs, h.Timings, 100*h.MaxOthersShare, h.MaxLoad1)
	if h.MaxStealShare >= 0.01 {
		s += fmt.Sprintf("; up to %.0f %% stolen by the hypervisor", 100*h.MaxStealShare)
	}
	if h.MaxCPUMHz > 0 {
		s += fmt.Sprintf("; CPU clock %.0f-%.0f MHz", h.MinCPUMHz, h.MaxCPUMHz)
	}
	if h.Busy > 0 {
		s += fmt.Sprintf("; %d timings at or above %.0f %% (host_busy)", h.Busy, 100*h.BusyShare)
	}
	return s
}

// containerLine says what the runner saw of its container, "" outside one.
func containerLine(c *result.Container) string {
	if c == nil {
		return ""
	}
	parts := []string{c.ID}
	limit := func(name string, v int64) {
		if v > 0 {
			parts = append(parts, fmt.Sprintf("%s %.3g GiB", name, float64(v)/(1<<30)))
		}
	}
	limit("memory limit", c.MemoryLimitBytes)
	if c.CPULimit > 0 {
		parts = append(parts, fmt.Sprintf("CPU limit %.3g", c.CPULimit))
	}
	if c.PidsLimit > 0 {
		parts = append(parts, fmt.Sprintf("pids limit %d", c.PidsLimit))
	}
	if c.CPUs > 0 {
		parts = append(parts, fmt.Sprintf("%d CPUs", c.CPUs))
	}
	limit("shm", c.ShmBytes)
	if c.VisibleDevices != "" {
		parts = append(parts, "NVIDIA_VISIBLE_DEVICES="+c.VisibleDevices)
	}
	return strings.Join(parts, ", ")
}

func gitLine(e result.Env) string {
	if e.GitCommit != "" && e.GitDirty {
		return e.GitCommit + " (with changes not in it)"
	}
	return e.GitCommit
}

func hostLine(e result.Env) string {
	s := e.Host
	if e.OS != "" || e.Arch != "" {
		s += " (" + strings.Trim(e.OS+"/"+e.Arch, "/") + ")"
	}
	return strings.TrimSpace(s)
}

func imageLine(im result.Image) string {
	var s string
	switch {
	case im.Ref != "" && im.Digest != "":
		s = im.Ref + " (" + im.Digest + ")"
	case im.Ref != "":
		s = im.Ref
	default:
		s = im.Digest
	}
	if im.CodeHash != "" {
		s += ", code " + im.CodeHash[:min(12, len(im.CodeHash))]
	}
	return s
}

// clocks describes a GPU's readings before and after the run.
func clocks(g result.GPU) string {
	b, a := g.Before, g.After
	if b == nil && a == nil {
		return ""
	}
	var parts []string
	state := func(when string, s *result.GPUState) {
		if s == nil {
			return
		}
		p := fmt.Sprintf("%s: SM %d MHz", when, s.SMClockMHz)
		if s.MaxSMClockMHz > 0 {
			p += fmt.Sprintf(" of %d", s.MaxSMClockMHz)
		}
		p += fmt.Sprintf(", memory %d MHz, %d°C, %.0f W", s.MemClockMHz, s.TemperatureC, s.PowerW)
		if s.PowerLimitW > 0 {
			p += fmt.Sprintf(" of %.0f W", s.PowerLimitW)
		}
		reasons := "none"
		if len(s.ClockEventReasons) > 0 {
			reasons = strings.Join(s.ClockEventReasons, ", ")
		}
		p += ", clock event reasons: " + reasons
		parts = append(parts, p)
	}
	state("before", b)
	state("after", a)
	return strings.Join(parts, "; ")
}

// during describes the readings taken while samples were timed.
func during(c *result.Clocks) string {
	if c == nil || c.Readings == 0 {
		return ""
	}
	s := fmt.Sprintf("SM %d MHz median (%d-%d) over %d readings, up to %.0f W", c.SMClockMHz, c.MinSMClockMHz,
		c.MaxSMClockMHz, c.Readings, c.MaxPowerW)
	if c.ThrottledReadings > 0 {
		s += fmt.Sprintf("; clocks held back in %d of them (%s)", c.ThrottledReadings, strings.Join(c.ClockEventReasons, ", "))
	}
	return s
}
