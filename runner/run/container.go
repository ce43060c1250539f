package run

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/xrun-dev/xrun/result"
)

// containerFacts describes the container the runner runs in, read under
// root ("/" but in tests), or nil outside one. Docker marks its containers
// with /.dockerenv, Podman with /run/.containerenv.
func containerFacts(root string) *result.Container {
	in := false
	for _, marker := range []string{".dockerenv", "run/.containerenv"} {
		if _, err := os.Stat(filepath.Join(root, marker)); err == nil {
			in = true
		}
	}
	// A Kubernetes pod's runtime (containerd, CRI-O) leaves no marker
	// file; its cgroup path names the pod.
	if b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup")); err == nil && strings.Contains(string(b), "kubepods") {
		in = true
	}
	if !in {
		return nil
	}
	c := &result.Container{CPUs: runtime.NumCPU(), VisibleDevices: os.Getenv("NVIDIA_VISIBLE_DEVICES")}
	c.ID, _ = os.Hostname()
	cg := filepath.Join(root, "sys/fs/cgroup")
	c.MemoryLimitBytes = readLimit(filepath.Join(cg, "memory.max"))
	if c.MemoryLimitBytes == 0 {
		// cgroup v1 says "no limit" with a page-rounded huge number.
		if v := readLimit(filepath.Join(cg, "memory/memory.limit_in_bytes")); v < 1<<62 {
			c.MemoryLimitBytes = v
		}
	}
	c.PidsLimit = readLimit(filepath.Join(cg, "pids.max"))
	if c.PidsLimit == 0 {
		c.PidsLimit = readLimit(filepath.Join(cg, "pids/pids.max")) // cgroup v1
	}
	if b, err := os.ReadFile(filepath.Join(cg, "cpu.max")); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 && f[0] != "max" {
			quota, e1 := strconv.ParseFloat(f[0], 64)
			period, e2 := strconv.ParseFloat(f[1], 64)
			if e1 == nil && e2 == nil && period > 0 {
				c.CPULimit = quota / period
			}
		}
	}
	c.ShmBytes = fsBytes(filepath.Join(root, "dev/shm"))
	return c
}

// readLimit reads a cgroup limit file: a number, or "max" (0, no limit).
func readLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}
