package profile

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    *Request
		wantErr string
	}{
		{in: "", want: nil},
		{in: "off", want: nil},
		{in: "ncu", want: &Request{Clock: "none"}},
		{in: " ncu: ", want: &Request{Clock: "none"}},
		{in: "ncu:impl=a,b;case=0,2", want: &Request{Impls: []string{"a", "b"}, Cases: []int{0, 2}, Clock: "none"}},
		{in: "ncu:impl=b, a ,b;case=all", want: &Request{Impls: []string{"b", "a"}, Clock: "none"}},
		{in: "ncu:case=1;set=full;clock=base", want: &Request{Cases: []int{1}, Set: "full", Clock: "base"}},
		{in: "ncu:impl=reference;", want: &Request{Impls: []string{"reference"}, Clock: "none"}},
		{in: "nsys", wantErr: `must be "ncu"`},
		{in: "ncu:impl", wantErr: "not key=value"},
		{in: "ncu:impl=", wantErr: "not key=value"},
		{in: "ncu:impl=a b", wantErr: "not a name"},
		{in: "ncu:case=-1", wantErr: "not a case index"},
		{in: "ncu:case=x", wantErr: "not a case index"},
		{in: "ncu:set=full --kill", wantErr: "section set"},
		{in: "ncu:clock=max", wantErr: "none or base"},
		{in: "ncu:impl=a;impl=b", wantErr: "given twice"},
		{in: "ncu:kernel=x", wantErr: `unknown key "kernel"`},
	} {
		got, err := Parse(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if got != nil {
			back, err := Parse(got.String())
			if err != nil || !reflect.DeepEqual(back, got) {
				t.Errorf("Parse(%q).String() = %q reads back as %+v, %v", tc.in, got.String(), back, err)
			}
		}
	}
}

func TestCheck(t *testing.T) {
	impls := []string{"torch", "triton", "naive"}
	r, _ := Parse("ncu")
	if got, err := r.Check(impls, 3); err != nil || !reflect.DeepEqual(got, impls) || !r.WantsCase(2) {
		t.Errorf("all: %v, %v", got, err)
	}
	r, _ = Parse("ncu:impl=naive,reference,torch;case=2")
	if got, err := r.Check(impls, 3); err != nil || !reflect.DeepEqual(got, []string{"reference", "torch", "naive"}) {
		t.Errorf("chosen, in spec order after the reference: %v, %v", got, err)
	}
	if r.WantsCase(0) || !r.WantsCase(2) {
		t.Error("WantsCase")
	}
	r, _ = Parse("ncu:impl=trtion")
	if _, err := r.Check(impls, 3); err == nil || !strings.Contains(err.Error(), `no implementation "trtion" (the spec has torch, triton, naive`) {
		t.Errorf("typo: %v", err)
	}
	r, _ = Parse("ncu:case=3")
	if _, err := r.Check(impls, 3); err == nil || !strings.Contains(err.Error(), "no case 3 (this run has 3") {
		t.Errorf("case out of range: %v", err)
	}
}

func TestArgv(t *testing.T) {
	r, _ := Parse("ncu:set=full")
	f := FilesFor("fused/v2")
	if f != (Files{Report: "profile/fused_v2.ncu-rep", Summary: "profile/fused_v2.txt", Log: "profile/fused_v2.ncu.log"}) {
		t.Errorf("FilesFor = %+v", f)
	}
	got := r.Argv("/usr/local/cuda/bin/ncu", "/xrun/out", f, []string{"python3", "-u", "/tmp/h/harness.py"})
	want := []string{"/usr/local/cuda/bin/ncu", "--profile-from-start", "off", "--nvtx", "--target-processes", "all",
		"--clock-control", "none", "--set", "full", "--log-file", "/xrun/out/profile/fused_v2.ncu.log", "-f",
		"-o", "/xrun/out/profile/fused_v2", "python3", "-u", "/tmp/h/harness.py"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Argv =\n%q\nwant\n%q", got, want)
	}
}

func TestExplain(t *testing.T) {
	for _, tc := range []struct{ log, want string }{
		{"==PROF== Connected to process 948\n==PROF== Report: /xrun/out/profile/a.ncu-rep\n", ""},
		{"==PROF== Connected to process 12\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU " +
			"Performance Counters on the target device 0. For instructions on enabling permissions and to get more information " +
			"see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n==WARNING== No kernels were profiled.\n", "NVreg_RestrictProfilingToAdminUsers=0"},
		{"==PROF== Disconnected from process 7\n==WARNING== No kernels were profiled.\n", "profiled no kernel"},
		{"==ERROR== Failed to prepare kernel for profiling\n==ERROR== Unknown Error on device 0.\n",
			"ncu: ==ERROR== Failed to prepare kernel for profiling; ==ERROR== Unknown Error on device 0."},
	} {
		if got := Explain(tc.log); (tc.want == "" && got != "") || !strings.Contains(got, tc.want) {
			t.Errorf("Explain(%q) = %q, want %q", tc.log, got, tc.want)
		}
	}
}

// The details page of a real report (H100, ncu 2025.3.1: a Triton softmax
// and the five kernels of an eager one) names six kernel launches.
func TestCountKernels(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "details.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if n := CountKernels(string(b)); n != 6 {
		t.Errorf("CountKernels = %d, want 6", n)
	}
	if n := CountKernels("==PROF== nothing\n"); n != 0 {
		t.Errorf("CountKernels of no report = %d", n)
	}
}
