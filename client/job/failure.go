package job

import (
	"fmt"
	"strings"

	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/result"
)

// FailureSentence says in one sentence why a job whose runner exited with
// "an implementation failed" failed: the first implementation that did not
// run through, where, and what to do about it; "" when none did.
func FailureSentence(r *result.Results) string {
	var first, where string
	var ir *result.ImplResult
	n, sameImpl := 0, 0
	others := map[string]bool{}
	for _, c := range r.Cases {
		for _, name := range append([]string{result.Reference}, r.Implementations...) {
			x := c.Results[name]
			if x == nil || x.Status == result.ImplOK || x.Status == result.ImplSkipped || x.Status == result.ImplNotRun {
				continue
			}
			switch {
			case n == 0:
				first, where, ir = name, c.Label, x
			case name == first:
				sameImpl++
			default:
				others[name] = true
			}
			n++
		}
	}
	if n == 0 {
		return ""
	}
	msg := text.OneLine(ir.Error)
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	var s string
	switch ir.Status {
	case result.ImplOOM:
		// The worker's message says which memory (the container's limit,
		// the host's, the GPU's) and what to raise.
		mem, advice := "memory", "make the case smaller, or raise resources.memory"
		if strings.Contains(msg, "CUDA") || strings.Contains(msg, "GPU") {
			mem, advice = "GPU memory", "make the case smaller or run it on a GPU with more memory"
		}
		s = fmt.Sprintf("implementation %s ran out of %s at %s (%s): %s", first, mem, where, msg, advice)
	case result.ImplWrong:
		s = fmt.Sprintf("implementation %s gave wrong results at %s (%s)", first, where, msg)
	case result.ImplTimeout:
		s = fmt.Sprintf("implementation %s ran past its time limit at %s (%s)", first, where, msg)
	default:
		s = fmt.Sprintf("implementation %s %s at %s: %s", first, statusWord(ir.Status), where, msg)
	}
	// What else failed, said as what it is: more cases of the same
	// implementation, other implementations.
	if sameImpl > 0 {
		s += fmt.Sprintf("; %s failed at %d more %s", first, sameImpl, render.Plural(sameImpl, "case", "cases"))
	}
	if len(others) > 0 {
		s += fmt.Sprintf("; %d other %s failed", len(others), render.Plural(len(others), "implementation", "implementations"))
	}
	return s
}

func statusWord(status string) string {
	switch status {
	case result.ImplCrashed:
		return "crashed"
	case result.ImplError:
		return "failed"
	}
	return status
}
