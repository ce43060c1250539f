package run

import (
	"os"
	"path/filepath"
	"testing"
)

func TestContainerFacts(t *testing.T) {
	root := t.TempDir()
	if c := containerFacts(root); c != nil {
		t.Fatalf("no container marker, got %+v", c)
	}
	write := func(name, data string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A Kubernetes pod: no marker file, a cgroup path that names the pod.
	write("proc/self/cgroup", "4:memory:/kubepods/burstable/pod1234/abcd\n")
	if c := containerFacts(root); c == nil {
		t.Error("a pod's cgroup path is not taken for a container")
	}
	os.Remove(filepath.Join(root, "proc/self/cgroup"))
	write(".dockerenv", "")
	write("sys/fs/cgroup/memory.max", "17179869184\n")
	write("sys/fs/cgroup/pids.max", "4096\n")
	write("sys/fs/cgroup/cpu.max", "200000 100000\n")
	t.Setenv("NVIDIA_VISIBLE_DEVICES", "0")
	c := containerFacts(root)
	if c == nil || c.MemoryLimitBytes != 16<<30 || c.PidsLimit != 4096 || c.CPULimit != 2 || c.VisibleDevices != "0" || c.CPUs < 1 || c.ID == "" {
		t.Errorf("got %+v", c)
	}
	write("sys/fs/cgroup/memory.max", "max\n")
	write("sys/fs/cgroup/pids.max", "max\n")
	write("sys/fs/cgroup/cpu.max", "max 100000\n")
	c = containerFacts(root)
	if c.MemoryLimitBytes != 0 || c.PidsLimit != 0 || c.CPULimit != 0 {
		t.Errorf("no limits: got %+v", c)
	}
	// cgroup v1 spells them in controller folders.
	write("sys/fs/cgroup/memory/memory.limit_in_bytes", "1073741824\n")
	write("sys/fs/cgroup/pids/pids.max", "8192\n")
	if c = containerFacts(root); c.MemoryLimitBytes != 1<<30 || c.PidsLimit != 8192 {
		t.Errorf("cgroup v1: got %+v", c)
	}
}
