package build

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/render"
)

// buildOutput is what a person sees of an image build: one line per step
// ("build: step 3/8 COPY ..."), as a status line redrawn in place on a
// terminal, or every line the daemon sent with verbose. The full output
// is kept (Prepared.BuildLog), for the job's store and for a failure.
type buildOutput struct {
	st      *render.Status
	verbose bool
	full    bytes.Buffer
	steps   int
	start   time.Time
}

// stepLine is the classic builder's step header: "Step 3/8 : COPY a b".
var stepLine = regexp.MustCompile(`^Step (\d+/\d+) : (.*)$`)

// maxStepText keeps a plain step line to one line of a log.
const maxStepText = 100

func (o *buildOutput) line(line string) {
	o.full.WriteString(line + "\n")
	if o.verbose {
		o.st.Println(line)
		return
	}
	m := stepLine.FindStringSubmatch(line)
	if m == nil {
		return
	}
	o.steps++
	text := "build: step " + m[1] + " " + strings.Join(strings.Fields(m[2]), " ")
	if o.st.Live() {
		o.st.Set(text)
		return
	}
	if r := []rune(text); len(r) > maxStepText {
		text = string(r[:maxStepText-1]) + "…"
	}
	o.st.Println(text)
}

// done ends the build's output: the status line gives way to one line
// saying what was built.
func (o *buildOutput) done(ref string) {
	o.st.Clear()
	if o.verbose {
		return
	}
	o.st.Println(fmt.Sprintf("built %s in %.1f s (%d steps; the full build log is the job's %s, or pass --verbose)",
		ref, time.Since(o.start).Seconds(), o.steps, BuildLogFile))
}

// failed ends a failed build's output: the full log, which says why.
func (o *buildOutput) failed() {
	o.st.Clear()
	if o.verbose {
		return
	}
	o.st.Println("build output:")
	o.st.Write(o.full.Bytes())
}

// BuildLogFile is the name of the image build's full output in the job's
// directory of the store.
const BuildLogFile = "build.log"
