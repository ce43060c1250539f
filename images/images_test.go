package images

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/spec"
)

func TestResolve(t *testing.T) {
	tests := []struct {
		name    string
		img     spec.Image
		cpu     bool
		want    string
		wantErr []string
	}{
		{name: "nothing set", want: "xrun/cuda13-torch2.11:py3.12"},
		{name: "nothing set, cpu", cpu: true, want: "xrun/cpu-torch2.11:py3.12"},
		{name: "named base", img: spec.Image{Base: "cuda-torch"}, want: "xrun/cuda13-torch2.11:py3.12"},
		{name: "named cuda12", img: spec.Image{Base: "cuda12-torch"}, want: "xrun/cuda12-torch2.11:py3.12"},
		{name: "named cpu-debian", img: spec.Image{Base: "cpu-debian"}, want: "xrun/cpu-torch:bookworm"},
		{name: "named gpu base, cpu run takes the cpu base", img: spec.Image{Base: "cuda12-torch"}, cpu: true, want: "xrun/cpu-torch2.11:py3.12"},
		{name: "named cpu base, cpu run", img: spec.Image{Base: "cpu-debian"}, cpu: true, want: "xrun/cpu-torch:bookworm"},
		{name: "reference as is", img: spec.Image{Base: "nvcr.io/nvidia/pytorch:25.01-py3"}, want: "nvcr.io/nvidia/pytorch:25.01-py3"},
		{name: "table ref as is", img: spec.Image{Base: "xrun/cpu-base:bookworm"}, want: "xrun/cpu-base:bookworm"},
		{name: "named base with agreeing versions", img: spec.Image{Base: "cuda12-torch", Torch: "2.11", CUDA: "12.8"}, want: "xrun/cuda12-torch2.11:py3.12"},
		{name: "named base with other cuda", img: spec.Image{Base: "cuda-torch", CUDA: "12.8"},
			wantErr: []string{"image.base cuda-torch has torch 2.11.0, CUDA 13.0", `image.cuda "12.8"`}},
		{name: "named gpu base with cuda cpu", img: spec.Image{Base: "cuda-torch", CUDA: "cpu"}, wantErr: []string{"does not match"}},
		{name: "reference with versions", img: spec.Image{Base: "my/img:1", Torch: "2.11"},
			wantErr: []string{`image.base "my/img:1" is an image reference`, "cpu-debian, cpu-debian-numpy, cuda-torch"}},
		{name: "torch only", img: spec.Image{Torch: "2.11"}, want: "xrun/cuda13-torch2.11:py3.12"},
		{name: "torch full version", img: spec.Image{Torch: "2.11.0"}, want: "xrun/cuda13-torch2.11:py3.12"},
		{name: "torch major", img: spec.Image{Torch: "2"}, want: "xrun/cuda13-torch2.11:py3.12"},
		{name: "torch only, cpu", img: spec.Image{Torch: "2.11"}, cpu: true, want: "xrun/cpu-torch2.11:py3.12"},
		{name: "debian torch, cpu", img: spec.Image{Torch: "1.13"}, cpu: true, want: "xrun/cpu-torch:bookworm"},
		{name: "cuda 12", img: spec.Image{CUDA: "12"}, want: "xrun/cuda12-torch2.11:py3.12"},
		{name: "cuda 12.8 and torch", img: spec.Image{Torch: "2.11", CUDA: "12.8"}, want: "xrun/cuda12-torch2.11:py3.12"},
		{name: "wheel tag", img: spec.Image{CUDA: "cu128"}, want: "xrun/cuda12-torch2.11:py3.12"},
		{name: "wheel tag 13", img: spec.Image{Torch: "2.11", CUDA: "cu130"}, want: "xrun/cuda13-torch2.11:py3.12"},
		{name: "cuda given, cpu run", img: spec.Image{CUDA: "13.0"}, cpu: true, want: "xrun/cuda13-torch2.11:py3.12"},
		{name: "cuda cpu", img: spec.Image{Torch: "1.13.1", CUDA: "cpu"}, want: "xrun/cpu-torch:bookworm"},
		{name: "2.1 is not 2.11", img: spec.Image{Torch: "2.1"},
			wantErr: []string{"no base image with torch 2.1 and a GPU", "torch 2.11.0, CUDA 13.0, Python 3.12 (xrun/cuda13-torch2.11:py3.12)", "named bases: cpu, cpu-debian"}},
		{name: "unknown cuda", img: spec.Image{Torch: "2.11", CUDA: "11.8"}, wantErr: []string{"no base image with torch 2.11 and CUDA 11.8; known: "}},
		{name: "debian torch on gpu", img: spec.Image{Torch: "1.13"}, wantErr: []string{"torch 1.13 and a GPU"}},
		{name: "unknown torch, cpu", img: spec.Image{Torch: "3.0"}, cpu: true, wantErr: []string{"torch 3.0 and CPU", "or set image.base to any image reference"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.img, tc.cpu)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Resolve = %q, want an error", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Resolve = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestVersionMatches(t *testing.T) {
	tests := []struct {
		want, have string
		ok         bool
	}{
		{"2", "2.11.0", true}, {"2.11", "2.11.0", true}, {"2.11.0", "2.11.0", true}, {"v2.11", "2.11.0", true},
		{"2.1", "2.11.0", false}, {"2.11.0.1", "2.11.0", false}, {"2.11", "", false}, {"13", "13.0", true}, {"12.8", "13.0", false},
	}
	for _, tc := range tests {
		if got := versionMatches(tc.want, tc.have); got != tc.ok {
			t.Errorf("versionMatches(%q, %q) = %v", tc.want, tc.have, got)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := map[string]string{
		`{"default":"a","default_cpu":"a","bases":{"a":"x"},"images":[{"ref":"x","python":"3","dockerfile":"d"}],"extra":1}`:                         "unknown field",
		`{"default":"a","default_cpu":"a","bases":{"a":"y"},"images":[{"ref":"x","python":"3","dockerfile":"d"}]}`:                                   "names y, which has no row",
		`{"default":"b","default_cpu":"a","bases":{"a":"x"},"images":[{"ref":"x","python":"3","dockerfile":"d"}]}`:                                   `default base "b"`,
		`{"default":"a","default_cpu":"a","bases":{"a":"x"},"images":[{"ref":"x","python":"3"}]}`:                                                    "exactly one of dockerfile and script",
		`{"default":"a","default_cpu":"a","bases":{"a":"x"},"images":[{"ref":"x","python":"3","script":"s"},{"ref":"x","python":"3","script":"s"}]}`: "empty or repeated",
	}
	for in, want := range tests {
		if _, err := Load([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load: error %v, want one containing %q", err, want)
		}
	}
}

// TestTableMatchesFiles keeps compat.json, the Dockerfiles and the README
// in step: each row's Dockerfile starts from its upstream image, pins its
// versions and names its tag; each row's build command is in the README.
func TestTableMatchesFiles(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range Default().Images {
		if !strings.Contains(string(readme), im.HowToMake()) {
			t.Errorf("README.md lacks %q", im.HowToMake())
		}
		if im.Script != "" {
			script := strings.Fields(im.Script)[0]
			if st, err := os.Stat(script); err != nil || st.Mode()&0o111 == 0 {
				t.Errorf("%s: script %s is missing or not executable (%v)", im.Ref, script, err)
			}
			continue
		}
		b, err := os.ReadFile(filepath.Join(im.Dockerfile, "Dockerfile"))
		if err != nil {
			t.Errorf("%s: %v", im.Ref, err)
			continue
		}
		df := string(b)
		wants := []string{"ARG TORCH_VERSION=" + im.Torch + "\n", "#   " + im.HowToMake() + "\n"}
		if im.CPU() {
			wants = append(wants, "FROM "+im.From+"\n")
		}
		if im.Triton != "" {
			wants = append(wants, "ARG TRITON_VERSION="+im.Triton+"\n")
		}
		if !im.CPU() {
			// The shared Dockerfile: FROM and CUDA come from the row.
			wants = append(wants, "FROM ${FROM}\n", "https://download.pytorch.org/whl/cu$(echo \"$CUDA\" | tr -d .)")
			if !strings.HasPrefix(im.From, "nvidia/cuda:"+im.CUDA+".") || !strings.HasSuffix(im.From, "-cudnn-devel-ubuntu24.04") {
				t.Errorf("%s: from %s is not the CUDA %s cudnn devel image", im.Ref, im.From, im.CUDA)
			}
		}
		for _, w := range wants {
			if !strings.Contains(df, w) {
				t.Errorf("%s/Dockerfile lacks %q", im.Dockerfile, w)
			}
		}
		if !regexp.MustCompile(`dev\.xrun\.python="` + regexp.QuoteMeta(im.Python) + `"`).MatchString(df) {
			t.Errorf("%s/Dockerfile does not label Python %s", im.Dockerfile, im.Python)
		}
	}
}

func TestHowToMake(t *testing.T) {
	im, ok := Lookup("xrun/cpu-torch:bookworm")
	if !ok || im.HowToMake() != "images/make-cpu-base.sh --torch" {
		t.Errorf("cpu-torch: %v %q", ok, im.HowToMake())
	}
	im, ok = Lookup("xrun/cuda12-torch2.11:py3.12")
	if !ok || im.HowToMake() != "docker build -t xrun/cuda12-torch2.11:py3.12 --build-arg FROM=nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04 --build-arg CUDA=12.8 images/cuda" {
		t.Errorf("cuda12: %v %q", ok, im.HowToMake())
	}
	if _, ok := Lookup("busybox"); ok {
		t.Error("Lookup(busybox) found a row")
	}
}

func TestCheckDriver(t *testing.T) {
	tests := []struct {
		cuda, driver string
		want         string // a part of the error; "" for none
	}{
		{"13.0", "580.159.04", ""},
		{"13.0.88", "580.65.06", ""},
		{"12.8", "580.159.04", ""}, // backward compatibility
		{"12.8.1", "525.60.13", ""},
		{"11.8", "470.57.02", ""},
		{"13.0", "575.51.03", "needs driver 580.65.06 or newer; the host's NVIDIA driver 575.51.03 runs CUDA 12 and older"},
		{"14.0", "580.159.04", "needs a newer driver than any this table knows; the host's NVIDIA driver 580.159.04 runs CUDA 13 and older"},
		{"12.4", "418.67", "older than any CUDA this table knows"},
		{"cu130", "570.86.10", "built for CUDA cu130"},
		{"", "580.159.04", ""}, // unknown image CUDA: not refused
		{"13.0", "", ""},       // unknown driver: not refused
		{"13.0", "580.x", ""},  // unreadable driver: not refused
	}
	for _, tt := range tests {
		err := CheckDriver(tt.cuda, tt.driver)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckDriver(%q, %q) = %v, want nil", tt.cuda, tt.driver, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckDriver(%q, %q) = %v, want it to say %q", tt.cuda, tt.driver, err, tt.want)
		}
	}
}

func TestLoadRejectsBadDriverRows(t *testing.T) {
	bad := `{"default": "c", "default_cpu": "c", "bases": {"c": "x/c"}, "images": [{"ref": "x/c", "python": "3", "script": "s"}], "drivers": [{"cuda_major": 13, "min_driver": "five-eighty"}]}`
	if _, err := Load([]byte(bad)); err == nil || !strings.Contains(err.Error(), "driver row") {
		t.Errorf("Load = %v, want a driver row error", err)
	}
}
