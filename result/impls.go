package result

// A run's implementations: the reference among them, their names, and
// what a stopped run left unfinished of them.

// StopInProgress is the stop reason of a timing whose rounds go on.
const StopInProgress = "in_progress"

// Interrupt marks what a stopped run left unfinished, for each of names on
// every case: an implementation that had not run, or whose timing was
// still in progress, is not_run with reason (a timing in progress is
// dropped); checks and timings already made stay. The runner calls it
// when it is stopped, and the client when the runner died before it could.
func (r *Results) Interrupt(names []string, reason string) {
	for ci := range r.Cases {
		c := &r.Cases[ci]
		if c.Results == nil {
			c.Results = map[string]*ImplResult{}
		}
		for _, name := range names {
			ir := c.Results[name]
			inProgress := ir != nil && ir.Timing != nil && ir.Timing.StopReason == StopInProgress
			switch {
			case ir == nil:
				c.Results[name] = &ImplResult{Status: ImplNotRun, Error: reason}
			case ir.Status == ImplNotRun || ir.Status == ImplOK && (ir.Timing == nil || inProgress):
				ir.Status, ir.Error, ir.Timing = ImplNotRun, reason, nil
			case inProgress:
				ir.Timing = nil
			}
		}
	}
}

// Reference is the reference implementation's name among a run's
// implementations (Case.Results, comparisons, the history): the spec's
// benchmark.reference, which every implementation is checked against.
const Reference = "reference"

// Names are the implementations the results speak of: the reference where
// a case has it, then Implementations.
func (r *Results) Names() []string {
	var names []string
	for _, c := range r.Cases {
		if _, ok := c.Results[Reference]; ok {
			names = append(names, Reference)
			break
		}
	}
	return append(names, r.Implementations...)
}
