package gpuinfo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/result"
)

// MonitorInterval is how often the monitor reads the GPUs.
const MonitorInterval = 100 * time.Millisecond

// Fields the monitor reads; index comes first (queryColumns cannot drop it).
const fieldTimestamp = "timestamp"

var monitorFields = []field{
	{[]string{FieldIndex}}, {[]string{fieldTimestamp}}, {[]string{FieldSMClock}}, {[]string{FieldPower}},
	{[]string{FieldReasons, "clocks_throttle_reasons.active"}}, {[]string{FieldTemperature}},
}

// smiTimeLayout is nvidia-smi's timestamp field ("2026/11/22 06:18:16.735"),
// in the machine's local time.
const smiTimeLayout = "2006/01/02 15:04:05.000"

// Reading is one sample of one GPU.
type Reading struct {
	At           time.Time
	Index        int
	SMClockMHz   int
	PowerW       float64
	TemperatureC int
	Reasons      []string // clock event reasons, decoded
}

// Window is a span of time in which samples were timed.
type Window struct{ From, To time.Time }

// Monitor reads every GPU's SM clock, power and clock event reasons every
// MonitorInterval while the runner times kernels. A reading before the run
// and one after miss a clock that fell under load and came back once the
// load stopped: a power-limited matmul on an H100 runs at 1150-1500 MHz with
// sw_power_cap active, and the card reads 1980 MHz again a second later.
// Like the rest of the package it only reads.
type Monitor struct {
	cancel context.CancelFunc
	cmd    *exec.Cmd
	done   chan struct{}

	mu       sync.Mutex
	readings []Reading
	err      error
}

// StartMonitor starts `nvidia-smi --query-gpu=... -lms` (line-buffered
// through stdbuf where the machine has it) and collects its readings until
// Stop.
func StartMonitor(ctx context.Context) (*Monitor, error) {
	qctx, qcancel := context.WithTimeout(ctx, 30*time.Second)
	defer qcancel()
	_, cols, err := queryColumns(qctx, runSMI, monitorFields)
	if err != nil {
		return nil, fmt.Errorf("start GPU monitor: %w", err)
	}
	smi, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil, fmt.Errorf("start GPU monitor: %w", ErrNoGPU)
	}
	args := []string{smi, "--query-gpu=" + strings.Join(cols.names, ","), "--format=csv,noheader,nounits",
		"-lms", strconv.Itoa(int(MonitorInterval / time.Millisecond))}
	// nvidia-smi writes to a pipe through stdio; without line buffering the
	// last few seconds of readings would sit in its buffer when it is stopped.
	if sb, err := exec.LookPath("stdbuf"); err == nil {
		args = append([]string{sb, "-oL"}, args...)
	}
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cmd := exec.CommandContext(mctx, args[0], args[1:]...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("start GPU monitor: %w", err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start GPU monitor: %w", err)
	}
	m := &Monitor{cancel: cancel, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		m.consume(out, cols.canon)
	}()
	return m, nil
}

// consume parses readings from r until it ends.
func (m *Monitor) consume(r io.Reader, canon []string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rows, err := ParseRows(canon, sc.Text())
		if err != nil {
			m.mu.Lock()
			m.err = err
			m.mu.Unlock()
			continue
		}
		now := time.Now()
		for _, row := range rows {
			if rd, ok := parseReading(row, now); ok {
				m.mu.Lock()
				m.readings = append(m.readings, rd)
				m.mu.Unlock()
			}
		}
	}
}

func parseReading(row map[string]string, arrived time.Time) (Reading, bool) {
	idx, err := strconv.Atoi(row[FieldIndex])
	if err != nil {
		return Reading{}, false
	}
	at, err := time.ParseInLocation(smiTimeLayout, row[fieldTimestamp], time.Local)
	if err != nil {
		at = arrived
	}
	return Reading{At: at, Index: idx, SMClockMHz: atoi(row[FieldSMClock]), PowerW: atof(row[FieldPower]),
		TemperatureC: atoi(row[FieldTemperature]), Reasons: ParseReasons(row[FieldReasons])}, true
}

// Stop ends the sampling and waits for the last readings. It returns the
// first parse error, if any; readings taken stay available.
func (m *Monitor) Stop() error {
	m.cancel()
	err := m.cmd.Wait()
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	var ee *exec.ExitError
	if errors.As(err, &ee) || errors.Is(err, context.Canceled) {
		err = nil // stopped by us
	}
	if m.err != nil {
		return m.err
	}
	return err
}

// Readings returns a copy of the readings so far.
func (m *Monitor) Readings() []Reading {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.readings)
}

// Clocks summarises the readings of GPU index that fall in any of windows
// (all of them when windows is nil); nil when none does.
func (m *Monitor) Clocks(index int, windows []Window) *result.Clocks {
	m.mu.Lock()
	defer m.mu.Unlock()
	return summarizeClocks(m.readings, index, windows)
}

// summarizeClocks summarises the readings of GPU index inside windows (all
// of them when windows is nil), leaving out readings of an idle GPU; nil
// when none is left.
func summarizeClocks(readings []Reading, index int, windows []Window) *result.Clocks {
	var clocks []int
	var power []float64
	c := &result.Clocks{ClockEventReasons: []string{}}
	for _, rd := range readings {
		if rd.Index != index || slices.Contains(rd.Reasons, "gpu_idle") || !inWindows(rd.At, windows) {
			continue
		}
		clocks = append(clocks, rd.SMClockMHz)
		if rd.PowerW > 0 {
			power = append(power, rd.PowerW)
		}
		c.MaxPowerW = max(c.MaxPowerW, rd.PowerW)
		c.MaxTemperatureC = max(c.MaxTemperatureC, rd.TemperatureC)
		if held := holdingBack(rd.Reasons); len(held) > 0 {
			c.ThrottledReadings++
			if c.ReasonReadings == nil {
				c.ReasonReadings = map[string]int{}
			}
			for _, r := range held {
				c.ReasonReadings[r]++
				if !slices.Contains(c.ClockEventReasons, r) {
					c.ClockEventReasons = append(c.ClockEventReasons, r)
				}
			}
		}
	}
	if len(clocks) == 0 {
		return nil
	}
	slices.Sort(clocks)
	c.Readings = len(clocks)
	c.SMClockMHz = clocks[len(clocks)/2]
	c.MinSMClockMHz, c.MaxSMClockMHz = clocks[0], clocks[len(clocks)-1]
	if len(power) > 0 {
		slices.Sort(power)
		c.PowerW = power[len(power)/2]
	}
	return c
}

func inWindows(t time.Time, windows []Window) bool {
	if windows == nil {
		return true
	}
	for _, w := range windows {
		if !t.Before(w.From) && !t.After(w.To) {
			return true
		}
	}
	return false
}
