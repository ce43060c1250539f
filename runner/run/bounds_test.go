package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// Implementations that report absurd timings of their own (1e300 ms,
// 1e-300 ms: a throughput over it is +Inf), or fail with escape sequences
// or a 300 KB message, fail alone: results.json is written, the honest
// implementation's timing is in it, each liar has an error saying why,
// and the messages are bounded and clean in the results and the log.
func TestLiarsFailAlone(t *testing.T) {
	noGPU(t)
	ro := runFixture(t, context.Background(), Options{ExperimentDir: "testdata/liars"})
	if ro.err != nil || ro.code != contract.ExitFailed {
		t.Fatalf("err %v, exit %d, want %d", ro.err, ro.code, contract.ExitFailed)
	}
	r := readResults(t, ro.out)
	if honest := implOf(t, r, 0, "honest"); honest.Status != result.ImplOK || honest.Timing == nil || honest.Timing.MedianMS != 1 {
		t.Errorf("honest: %+v", honest)
	}
	for _, name := range []string{"huge", "tiny"} {
		ir := implOf(t, r, 0, name)
		if ir.Status != result.ImplError || ir.Timing != nil || !strings.Contains(ir.Error, "its timing is refused") {
			t.Errorf("%s: %s %q, timing %+v", name, ir.Status, ir.Error, ir.Timing)
		}
	}
	ctl := implOf(t, r, 0, "ctl")
	if ctl.Status != result.ImplError || strings.ContainsAny(ctl.Error, "\x1b\x07") || !strings.Contains(ctl.Error, "RuntimeError: red bell end") {
		t.Errorf("ctl: %s %q", ctl.Status, ctl.Error)
	}
	long := implOf(t, r, 0, "long")
	if long.Status != result.ImplError || len(long.Error) > 16<<10 || !strings.Contains(long.Error, "RuntimeError: AAA") ||
		!strings.HasSuffix(long.Error, "END") {
		t.Errorf("long: %s, error of %d bytes", long.Status, len(long.Error))
	}
	if strings.ContainsAny(ro.log, "\x1b\x07") || len(ro.log) > 64<<10 || strings.Contains(ro.log, "died") {
		t.Errorf("the runner's log (%d bytes) holds control characters, the long message or a death", len(ro.log))
	}
	if fi, err := os.Stat(filepath.Join(ro.out, result.FileName)); err != nil || fi.Size() > 64<<10 {
		t.Errorf("results.json: %v (%d bytes)", err, fi.Size())
	}
}
