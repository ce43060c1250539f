package analyze

import (
	"testing"
)

func TestPeak(t *testing.T) {
	for _, c := range []struct {
		gpu, dtype   string
		tflops, gbps float64
		ok           bool
	}{
		{"NVIDIA H100 80GB HBM3", "bfloat16", 989.5, 3350, true},
		{"NVIDIA H100 80GB HBM3", "torch.float16", 989.5, 3350, true},
		{"NVIDIA H100 80GB HBM3", "float32", 67, 3350, true},
		{"NVIDIA H100 80GB HBM3", "fp8", 1979, 3350, true},
		{"NVIDIA H100 PCIe", "bf16", 756, 2000, true},
		{"NVIDIA H100 NVL", "half", 835.5, 3900, true},
		{"NVIDIA H200", "bf16", 989.5, 4800, true},
		{"NVIDIA H200 NVL", "bf16", 835.5, 4800, true},
		{"NVIDIA GH200 480GB", "bf16", 989.5, 4000, true},
		{"NVIDIA GH200 144G HBM3e", "fp8", 1979, 4900, true},
		{"NVIDIA A100-SXM4-40GB", "tf32", 156, 1555, true},
		{"NVIDIA A100-SXM4-80GB", "float64", 19.5, 2039, true},
		{"NVIDIA A100-PCIE-40GB", "fp16", 312, 1555, true},
		{"NVIDIA A100 80GB PCIe", "fp16", 312, 1935, true},
		{"NVIDIA A100-SXM4-80GB", "fp8", 0, 2039, false},
		{"NVIDIA L4", "bf16", 121, 300, true},
		{"NVIDIA L40S", "bf16", 362.05, 864, true},
		{"Tesla T4", "float16", 65, 320, true},
		{"Tesla T4", "bfloat16", 0, 320, false},
		{"NVIDIA A10", "int8", 250, 600, true},
		{"NVIDIA GeForce RTX 4090", "bf16", 165.2, 1008, true},
		{"NVIDIA B200", "bf16", 2250, 8000, true},
		{"NVIDIA GB200", "fp8", 5000, 8000, true},
		{"NVIDIA H100 80GB HBM3", "complex64", 0, 3350, false},
		{"NVIDIA A10G", "bf16", 0, 0, false},
		{"Quadro P1000", "fp32", 0, 0, false},
	} {
		tf, bw, ok := Peak(c.gpu, c.dtype)
		if tf != c.tflops || bw != c.gbps || ok != c.ok {
			t.Errorf("Peak(%q, %q) = (%v, %v, %v), want (%v, %v, %v)", c.gpu, c.dtype, tf, bw, ok, c.tflops, c.gbps, c.ok)
		}
	}
	if bw, ok := PeakBandwidth("Tesla T4"); bw != 320 || !ok {
		t.Errorf("PeakBandwidth(T4) = %v, %v", bw, ok)
	}
}

// Every entry of the embedded table names its source and has a bandwidth,
// and the datasheets' required GPUs are all there.
func TestPeaksTable(t *testing.T) {
	table, err := Peaks()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range table {
		if e.Source == "" || e.GBps <= 0 || len(e.TFLOPS) == 0 {
			t.Errorf("entry %q lacks a source, bandwidth or TFLOPS", e.Name)
		}
		for d := range e.TFLOPS {
			if _, ok := CanonicalDtype(d); !ok {
				t.Errorf("entry %q: unknown dtype %q", e.Name, d)
			}
		}
	}
}

// fakeSMI writes an nvidia-smi script that rejects the fields in reject the
// way a real driver does, and prints the captured rows otherwise.
