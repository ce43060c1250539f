package analyze

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

//go:embed peaks.json
var peaksJSON []byte

// PeakEntry is one GPU model of the embedded peaks table.
type PeakEntry struct {
	Name    string             `json:"name"`
	Pattern string             `json:"pattern"`
	TFLOPS  map[string]float64 `json:"tflops"` // by canonical dtype: fp64, fp32, tf32, bf16, fp16, fp8, int8
	GBps    float64            `json:"gbps"`
	Source  string             `json:"source"`

	re *regexp.Regexp
}

var (
	peaksOnce sync.Once
	peaks     []PeakEntry
	peaksErr  error
)

// Peaks returns the embedded table, in match order.
func Peaks() ([]PeakEntry, error) {
	peaksOnce.Do(func() {
		var doc struct {
			GPUs []PeakEntry `json:"gpus"`
		}
		if err := json.Unmarshal(peaksJSON, &doc); err != nil {
			peaksErr = fmt.Errorf("decode embedded peaks.json: %w", err)
			return
		}
		for i := range doc.GPUs {
			re, err := regexp.Compile("(?i)" + doc.GPUs[i].Pattern)
			if err != nil {
				peaksErr = fmt.Errorf("peaks.json entry %q: bad pattern: %w", doc.GPUs[i].Name, err)
				return
			}
			doc.GPUs[i].re = re
		}
		peaks = doc.GPUs
	})
	return peaks, peaksErr
}

// Lookup returns the table entry whose pattern matches gpuName, first match
// first.
func Lookup(gpuName string) (PeakEntry, bool) {
	table, err := Peaks()
	if err != nil {
		return PeakEntry{}, false
	}
	for _, e := range table {
		if e.re.MatchString(gpuName) {
			return e, true
		}
	}
	return PeakEntry{}, false
}

// dtypes maps the accepted dtype spellings to the table's keys.
var dtypes = map[string]string{
	"bfloat16": "bf16", "bf16": "bf16",
	"float16": "fp16", "fp16": "fp16", "half": "fp16",
	"float32": "fp32", "fp32": "fp32", "float": "fp32",
	"tf32":    "tf32",
	"float64": "fp64", "fp64": "fp64", "double": "fp64",
	"fp8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8",
	"int8": "int8",
}

// CanonicalDtype returns the peaks table's name for a dtype spelling
// ("bfloat16" and "torch.bfloat16" are "bf16"), or false when it is unknown.
func CanonicalDtype(dtype string) (string, bool) {
	d := strings.ToLower(strings.TrimSpace(dtype))
	d = strings.TrimPrefix(strings.TrimPrefix(d, "torch."), "numpy.")
	c, ok := dtypes[d]
	return c, ok
}

// Peak looks up the dense peak TFLOPS for dtype and the memory bandwidth in
// GB/s of the GPU called gpuName (nvidia-smi's name, e.g. "NVIDIA H100 80GB
// HBM3"). Accepted dtypes: bfloat16, bf16, float16, fp16, half, float32,
// fp32, tf32, float64, fp64, fp8, int8 (int8 in TOPS). ok is false when the
// GPU is not in the table, or the dtype is unknown or not supported by the
// GPU in hardware; gbps is still set whenever the GPU is known.
func Peak(gpuName, dtype string) (tflops, gbps float64, ok bool) {
	e, found := Lookup(gpuName)
	if !found {
		return 0, 0, false
	}
	d, known := CanonicalDtype(dtype)
	if !known {
		return 0, e.GBps, false
	}
	t, has := e.TFLOPS[d]
	return t, e.GBps, has && t > 0
}

// PeakBandwidth returns the memory bandwidth in GB/s of the GPU called
// gpuName, whatever the dtype.
func PeakBandwidth(gpuName string) (gbps float64, ok bool) {
	e, found := Lookup(gpuName)
	return e.GBps, found && e.GBps > 0
}
