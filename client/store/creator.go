package store

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Creator names the xrun process that creates a job, as
// "BOOT_ID:PID:START" (Linux's boot id, and the process's start time in
// clock ticks since boot, so that a pid used again is not taken for it);
// "" where it cannot be told.
func Creator() string { return Process(os.Getpid()) }

// Process names the running process pid as Creator does, so that
// CreatorGone tells when it has ended; "" where it cannot be told (no
// such process, or no /proc).
func Process(pid int) string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	start, ok := startTime(pid)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s:%d:%s", strings.TrimSpace(string(boot)), pid, start)
}

// CreatorGone reports that the process s names (Creator) has ended:
// the machine booted since, or no process with its pid and start time
// runs. It is false when that cannot be told (s is empty or unreadable).
func CreatorGone(s string) bool {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return false
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return false
	}
	if strings.TrimSpace(string(boot)) != parts[0] {
		return true
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil {
		return false
	}
	start, ok := startTime(pid)
	return !ok || start != parts[2]
}

// CreatorPID is the pid in s (Creator), or 0.
func CreatorPID(s string) int {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return 0
	}
	pid, _ := strconv.Atoi(parts[1])
	return pid
}

// startTime reads field 22 of /proc/PID/stat, after the parenthesised
// command name (which may hold spaces); a zombie (dead, not yet reaped by
// its parent) has none.
func startTime(pid int) (string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(s[i+1:])
	// After the name come the state (field 3) ... starttime (field 22).
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return "", false
	}
	return f[19], true
}
