// Package gpuinfo reads the GPUs through nvidia-smi (identity, clocks,
// power, temperature, clock event reasons), once and while samples are
// timed (Monitor); what the readings say (throttled, at the power cap) and
// the table of GPU peaks are analyze's. It only reads:
// the runner never changes GPU settings (clocks, persistence, power limits),
// since that needs root on the host and would change the machine for
// everyone else on it.
package gpuinfo

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/result"
)

// ErrNoGPU means nvidia-smi is missing, cannot talk to a driver, or lists
// no GPU.
var ErrNoGPU = errors.New("no NVIDIA GPU found (nvidia-smi missing, no driver, or no device)")

// field is one nvidia-smi query field; alternates are older spellings tried
// in turn when a driver does not know the newer one.
type field struct {
	names []string
}

// Canonical field names, as parsed by ParseQuery.
const (
	FieldIndex       = "index"
	FieldName        = "name"
	FieldUUID        = "uuid"
	FieldComputeCap  = "compute_cap"
	FieldMemTotal    = "memory.total"
	FieldDriver      = "driver_version"
	FieldSMClock     = "clocks.sm"
	FieldMemClock    = "clocks.mem"
	FieldMaxSMClock  = "clocks.max.sm"
	FieldPower       = "power.draw"
	FieldPowerLimit  = "power.limit"
	FieldTemperature = "temperature.gpu"
	FieldUtilization = "utilization.gpu"
	FieldMemUsed     = "memory.used"
	FieldPersistence = "persistence_mode"
	FieldReasons     = "clocks_event_reasons.active"
)

var identityFields = []field{
	{[]string{FieldIndex}}, {[]string{FieldName}}, {[]string{FieldUUID}}, {[]string{FieldComputeCap}},
	{[]string{FieldMemTotal}}, {[]string{FieldDriver}},
}

var stateFields = []field{
	{[]string{FieldIndex}},
	{[]string{FieldSMClock}}, {[]string{FieldMemClock}}, {[]string{FieldMaxSMClock}},
	{[]string{FieldPower}}, {[]string{FieldPowerLimit}}, {[]string{FieldTemperature}},
	{[]string{FieldUtilization}}, {[]string{FieldMemUsed}}, {[]string{FieldPersistence}},
	// Drivers before 535 call clock event reasons "throttle reasons".
	{[]string{FieldReasons, "clocks_throttle_reasons.active"}},
}

// smiFunc runs nvidia-smi with args and returns its stdout.
type smiFunc func(ctx context.Context, args []string) ([]byte, error)

func runSMI(ctx context.Context, args []string) ([]byte, error) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil, fmt.Errorf("find nvidia-smi: %w", ErrNoGPU)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stdout.String() + "\n" + stderr.String())
		return nil, &smiError{msg: msg, err: err}
	}
	return stdout.Bytes(), nil
}

type smiError struct {
	msg string
	err error
}

func (e *smiError) Error() string {
	return fmt.Sprintf("run nvidia-smi: %v: %s", e.err, e.msg)
}

func (e *smiError) Unwrap() []error {
	if noDevice(e.msg) {
		return []error{e.err, ErrNoGPU}
	}
	return []error{e.err}
}

func noDevice(msg string) bool {
	return strings.Contains(msg, "No devices were found") ||
		strings.Contains(msg, "couldn't communicate with the NVIDIA driver")
}

var invalidFieldRE = regexp.MustCompile(`Field "([^"]+)" is not a valid field to query`)

// columns are the field names a driver accepted (names) and the canonical
// name of each (canon), in query order.
type columns struct{ names, canon []string }

// queryRows runs nvidia-smi for fields, replacing a field the driver does
// not know by its next alternate, or dropping it, and retrying. Rows are
// keyed by each field's canonical (first) name.
func queryRows(ctx context.Context, smi smiFunc, fields []field) ([]map[string]string, error) {
	rows, _, err := queryColumns(ctx, smi, fields)
	return rows, err
}

// queryColumns is queryRows that also returns the columns the driver took.
func queryColumns(ctx context.Context, smi smiFunc, fields []field) ([]map[string]string, columns, error) {
	alt := make([]int, len(fields)) // which alternate of each field is in use; -1: dropped
	for attempt := 0; attempt <= 2*len(fields); attempt++ {
		var names, canon []string
		for i, f := range fields {
			if alt[i] >= 0 {
				names = append(names, f.names[alt[i]])
				canon = append(canon, f.names[0])
			}
		}
		out, err := smi(ctx, []string{"--query-gpu=" + strings.Join(names, ","), "--format=csv,noheader,nounits"})
		if err == nil {
			rows, err := ParseRows(canon, string(out))
			return rows, columns{names, canon}, err
		}
		var se *smiError
		if !errors.As(err, &se) {
			return nil, columns{}, err
		}
		m := invalidFieldRE.FindStringSubmatch(se.msg)
		if m == nil {
			return nil, columns{}, err
		}
		i := -1
		for j, f := range fields {
			if alt[j] >= 0 && slices.Contains(f.names, m[1]) {
				i = j
				break
			}
		}
		if i <= 0 {
			// The driver rejects a field we cannot do without (index).
			return nil, columns{}, err
		}
		if alt[i]+1 < len(fields[i].names) {
			alt[i]++
		} else {
			alt[i] = -1
		}
	}
	return nil, columns{}, fmt.Errorf("query nvidia-smi: gave up after dropping unsupported fields")
}

// ParseRows splits nvidia-smi's csv,noheader,nounits output into one map per
// GPU, keyed by fields (in query order). Values are trimmed; "[N/A]",
// "[Not Supported]" and empty values are left out.
func ParseRows(fields []string, out string) ([]map[string]string, error) {
	r := csv.NewReader(strings.NewReader(out))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("parse nvidia-smi output: %w", err)
	}
	var rows []map[string]string
	for _, rec := range recs {
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != len(fields) {
			return nil, fmt.Errorf("parse nvidia-smi output: %d values for %d fields in %q", len(rec), len(fields), strings.Join(rec, ","))
		}
		row := map[string]string{}
		for i, v := range rec {
			v = strings.TrimSpace(v)
			if missing(v) {
				continue
			}
			row[fields[i]] = v
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func missing(v string) bool {
	return v == "" || strings.HasPrefix(v, "[") || strings.EqualFold(v, "N/A")
}

// ParseGPU turns one row (identity and state fields) into a GPU with Before
// filled. The peak figures come from the embedded table.
func ParseGPU(row map[string]string) (result.GPU, error) {
	idx, err := strconv.Atoi(row[FieldIndex])
	if err != nil {
		return result.GPU{}, fmt.Errorf("parse nvidia-smi index %q: %w", row[FieldIndex], err)
	}
	g := result.GPU{
		Index:             idx,
		Name:              row[FieldName],
		UUID:              row[FieldUUID],
		ComputeCapability: row[FieldComputeCap],
		MemoryBytes:       mib(row[FieldMemTotal]),
		Before:            ParseState(row),
	}
	if e, ok := analyze.Lookup(g.Name); ok {
		g.PeakGBps = e.GBps
		// The table's headline dtype for GPU kernels: bf16 where the GPU has
		// it, else fp16, else fp32.
		for _, d := range []string{"bf16", "fp16", "fp32"} {
			if t := e.TFLOPS[d]; t > 0 {
				g.PeakTFLOPS = t
				break
			}
		}
	}
	return g, nil
}

// ParseState turns one row's state fields into a GPUState.
func ParseState(row map[string]string) *result.GPUState {
	return &result.GPUState{
		SMClockMHz:        atoi(row[FieldSMClock]),
		MemClockMHz:       atoi(row[FieldMemClock]),
		MaxSMClockMHz:     atoi(row[FieldMaxSMClock]),
		PowerW:            atof(row[FieldPower]),
		PowerLimitW:       atof(row[FieldPowerLimit]),
		TemperatureC:      atoi(row[FieldTemperature]),
		Utilization:       atoi(row[FieldUtilization]),
		MemoryUsedBytes:   mib(row[FieldMemUsed]),
		PersistenceMode:   row[FieldPersistence],
		ClockEventReasons: ParseReasons(row[FieldReasons]),
	}
}

func gpusFromRows(rows []map[string]string) ([]result.GPU, string, error) {
	if len(rows) == 0 {
		return nil, "", ErrNoGPU
	}
	gpus := make([]result.GPU, 0, len(rows))
	for _, row := range rows {
		g, err := ParseGPU(row)
		if err != nil {
			return nil, "", err
		}
		gpus = append(gpus, g)
	}
	return gpus, rows[0][FieldDriver], nil
}

// Query reads every GPU's identity and current state through nvidia-smi and
// returns the GPUs with Before filled, and the driver version. Fields the
// driver does not support are dropped (older spellings tried first). It
// returns an error wrapping ErrNoGPU when nvidia-smi is missing or lists no
// GPU.
func Query(ctx context.Context) ([]result.GPU, string, error) {
	return query(ctx, runSMI)
}

func query(ctx context.Context, smi smiFunc) ([]result.GPU, string, error) {
	rows, err := queryRows(ctx, smi, append(slices.Clone(identityFields), stateFields[1:]...))
	if err != nil {
		return nil, "", fmt.Errorf("query GPUs: %w", err)
	}
	gpus, driver, err := gpusFromRows(rows)
	if err != nil {
		return nil, "", fmt.Errorf("query GPUs: %w", err)
	}
	return gpus, driver, nil
}

// State takes a later reading of every GPU's clocks, power, temperature and
// clock event reasons (the After of result.GPU), keyed by GPU index.
func State(ctx context.Context) (map[int]*result.GPUState, error) {
	return state(ctx, runSMI)
}

func state(ctx context.Context, smi smiFunc) (map[int]*result.GPUState, error) {
	rows, err := queryRows(ctx, smi, stateFields)
	if err != nil {
		return nil, fmt.Errorf("read GPU state: %w", err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("read GPU state: %w", ErrNoGPU)
	}
	out := make(map[int]*result.GPUState, len(rows))
	for _, row := range rows {
		idx, err := strconv.Atoi(row[FieldIndex])
		if err != nil {
			return nil, fmt.Errorf("read GPU state: index %q: %w", row[FieldIndex], err)
		}
		out[idx] = ParseState(row)
	}
	return out, nil
}

func atoi(s string) int {
	if s == "" {
		return 0
	}
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return int(atof(s))
}

func atof(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return v
}

func mib(s string) int64 { return int64(atof(s) * 1024 * 1024) }
