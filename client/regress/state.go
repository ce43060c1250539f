package regress

// State is where the rules stood on one series after some of its values:
// a walk resumed from it (WalkRelativeFrom) judges the values after them
// exactly as a walk from the series' first value does. The history keeps
// one a group of series (client/history, walk_states), so that a reader of
// a series of 10^6 values judges its last few, not all of them.
//
// Every field is bounded: the rules look back at most Window values, and a
// state holds at most twice that many.
type State struct {
	// Base holds the baseline H: the values accepted since the last change
	// point (the last Window of them at least), each the judged reading
	// and the time.
	Base []Accepted `json:"base,omitempty"`
	// LastSamples and LastConfig are the kept samples and the autotuned
	// config of the latest accepted value: the rank test's other side and
	// the config a breach is compared with.
	LastSamples []float64 `json:"last_samples,omitempty"`
	LastConfig  string    `json:"last_config,omitempty"`
	// Pending is the suspect that awaits its next value (nil: none).
	Pending *Pending `json:"pending,omitempty"`
	// Confirmed is the direction of a confirmed breach that still holds,
	// and Since the run that confirmed it.
	Confirmed string `json:"confirmed,omitempty"`
	Since     string `json:"since,omitempty"`
	// Timed says a value of the series converged.
	Timed bool `json:"timed,omitempty"`
	// Recent are the clean times since the last change point (the last
	// Window at least), which the host factor divides by.
	Recent []float64 `json:"recent,omitempty"`
	// LastBasis is the relative rule's basis of the last clean reading.
	LastBasis string `json:"last_basis,omitempty"`
	// Clocks are the clock rule's usual SM clocks (its readings since the
	// last change point, the last Window at least), and LastClock the timing
	// method of the series' last timing (a change of method starts a new
	// baseline: the history's Values).
	Clocks    []float64 `json:"clocks,omitempty"`
	LastClock string    `json:"last_clock,omitempty"`
}

// Accepted is one value of a baseline: the judged reading (the time, a
// ratio or the time over a host factor) and the time.
type Accepted struct {
	Value float64 `json:"v"`
	Time  float64 `json:"t"`
}

// Pending is a suspect that awaits its next value.
type Pending struct {
	Run       string `json:"run"`
	Direction string `json:"direction"`
}

// Outcome is what the values of a resumed walk made of the suspect its
// state held (State.Pending), a value the walk did not judge itself: a
// spike, or confirmed by a run.
type Outcome struct {
	Run         string
	Spike       bool
	Status      Status
	ConfirmedBy string
}

// Apply sets o on v, the verdict of o.Run's value.
func (o Outcome) Apply(v *Verdict) {
	if o.Spike {
		v.Spike = true
		return
	}
	v.Status, v.ConfirmedBy = o.Status, o.ConfirmedBy
}

// last keeps the last n of xs, at least: it copies them to a new slice
// once xs holds 2n, so that a walk of 10^6 values copies a window now and
// then, not at every value, and a state never holds more than 2n.
func last[T any](xs []T, n int) []T {
	if len(xs) >= 2*max(n, 1) {
		return append(xs[:0:0], xs[len(xs)-n:]...)
	}
	return xs
}
