package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/result"
)

// openPTY returns the two ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	ioctl := func(req uintptr, arg unsafe.Pointer) {
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), req, uintptr(arg)); e != 0 {
			t.Fatalf("ioctl %#x on /dev/ptmx: %v", req, e)
		}
	}
	var unlock int32
	ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock))
	var n uint32
	ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n))
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open the pseudo-terminal's tty: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// What an experiment prints reaches a terminal without its control
// sequences: the logs streamed by submit and printed by logs, and the
// error string of its results.
func TestTerminalOutputIsNeutralised(t *testing.T) {
	ta := newTestApp(t)
	dir := experiment(t, ta)
	evil := "\x1b]0;pwned\x07\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[1A"
	ta.fake.Behave = func(engine.ContainerSpec) enginetest.Run {
		r := result.Results{SchemaVersion: result.SchemaVersion, Experiment: "my-kernel", Status: result.StatusFailed,
			Error: "worker " + evil + "crashed", CreatedAt: time.Unix(0, 0).UTC()}
		data, _ := json.Marshal(r)
		return enginetest.Run{Exit: 2, Logs: "runner " + evil + "says hi\n", Files: map[string]string{"results.json": string(data)}}
	}
	master, tty := openPTY(t)
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		screen.ReadFrom(master) // ends with EIO once the tty is closed
	}()

	a := NewApp(tty, tty, ta.Getenv)
	a.Connect, a.RunnerFor, a.StoreRoot = ta.Connect, ta.RunnerFor, ta.StoreRoot
	ctx := context.Background()
	if code := a.report(a.Command().RunContext(ctx, []string{"xrun", "submit", "--cpu", dir})); code == 0 {
		t.Error("a failed job's submit exited 0")
	}
	st, err := a.Store()
	if err != nil {
		t.Fatal(err)
	}
	list, err := st.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("jobs %v, %v", list, err)
	}
	if code := a.report(a.Command().RunContext(ctx, []string{"xrun", "logs", list[0].ID})); code != 0 {
		t.Errorf("logs: exit %d", code)
	}
	tty.Close()
	<-read

	got := screen.String()
	for _, want := range []string{"runner says hi", "worker crashed"} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal did not show %q:\n%q", want, got)
		}
	}
	if strings.Count(got, "runner says hi") < 2 {
		t.Errorf("the logs were not shown by both submit and logs:\n%q", got)
	}
	// xrun's own status line (the build's step, the run's progress) is
	// redrawn with a carriage return and erase-line, and nothing else.
	if i := strings.IndexAny(strings.ReplaceAll(got, "\r\x1b[K", ""), "\x1b\x07"); i >= 0 {
		t.Errorf("a control sequence reached the terminal at %d:\n%q", i, got)
	}
}
