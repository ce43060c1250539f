package engine

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeStream(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantID   string
		wantStep string
		wantMsg  string
		wantLast string
		lines    []string
	}{
		{
			name: "classic builder success",
			in: `{"stream":"Step 1/2 : FROM scratch\n"}
{"stream":" ---\u003e Running in 1\n"}
{"stream":"Step 2/2 : COPY a /a\n"}
{"aux":{"ID":"sha256:abc"}}
{"stream":"Successfully built abc\n"}`,
			wantID: "sha256:abc",
			lines:  []string{"Step 1/2 : FROM scratch", " ---> Running in 1", "Step 2/2 : COPY a /a", "Successfully built abc"},
		},
		{
			name: "failing RUN",
			in: `{"stream":"Step 1/3 : FROM debian\n"}
{"stream":"Step 2/3 : RUN pip install x\n"}
{"stream":"/bin/sh: 1: pip: not found\n"}
{"errorDetail":{"code":127,"message":"The command '/bin/sh -c pip install x' returned a non-zero code: 127"},"error":"The command '/bin/sh -c pip install x' returned a non-zero code: 127"}`,
			wantStep: "Step 2/3 : RUN pip install x",
			wantMsg:  "returned a non-zero code: 127",
			wantLast: "pip: not found",
		},
		{
			name:    "error without a message is still an error",
			in:      `{"errorDetail":{}}`,
			wantMsg: "without a message",
		},
		{
			name:   "a line split over messages",
			in:     `{"stream":"hel"}{"stream":"lo\nwor"}{"stream":"ld"}`,
			lines:  []string{"hello", "world"},
			wantID: "",
		},
		{
			name:  "pull status",
			in:    `{"status":"Pulling from library/x","id":"latest"}`,
			lines: []string{"latest: Pulling from library/x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines []string
			id, err := decodeStream(strings.NewReader(tt.in), func(l string) { lines = append(lines, l) })
			if tt.wantMsg != "" {
				var be *BuildError
				if !errors.As(err, &be) {
					t.Fatalf("err = %v, want a BuildError", err)
				}
				if be.Step != tt.wantStep || !strings.Contains(be.Message, tt.wantMsg) {
					t.Errorf("BuildError = %+v", be)
				}
				if tt.wantLast != "" && !strings.Contains(strings.Join(be.Last, "\n"), tt.wantLast) {
					t.Errorf("Last = %q, want it to hold %q", be.Last, tt.wantLast)
				}
				if tt.wantStep != "" && !strings.Contains(be.Error(), tt.wantStep) {
					t.Errorf("message %q does not name the step", be.Error())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id != tt.wantID {
				t.Errorf("id = %q, want %q", id, tt.wantID)
			}
			if tt.lines != nil && strings.Join(lines, "|") != strings.Join(tt.lines, "|") {
				t.Errorf("lines = %q, want %q", lines, tt.lines)
			}
		})
	}
}

func TestTranslate(t *testing.T) {
	err := translate(errors.New(`Error response from daemon: could not select device driver "nvidia" with capabilities: [[gpu]]`))
	if !errors.Is(err, ErrNoGPURuntime) {
		t.Fatalf("err = %v, want ErrNoGPURuntime", err)
	}
	if !strings.Contains(err.Error(), "install nvidia-container-toolkit or pass --cpu") {
		t.Errorf("message %q", err)
	}
	other := errors.New("boom")
	if translate(other) != other {
		t.Error("an unknown error was changed")
	}
}

func TestGoArch(t *testing.T) {
	for in, want := range map[string]string{"x86_64": "amd64", "aarch64": "arm64", "amd64": "amd64", "riscv64": "riscv64"} {
		if got := goArch(in); got != want {
			t.Errorf("goArch(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestListedExitCode(t *testing.T) {
	for status, want := range map[string]int{
		"Exited (2) 3 minutes ago":   2,
		"Exited (130) 2 seconds ago": 130,
		"Exited (0) About an hour":   0,
		"Up 5 minutes":               0,
		"Created":                    0,
		"Exited (x)":                 0,
	} {
		if got := listedExitCode(status); got != want {
			t.Errorf("listedExitCode(%q) = %d, want %d", status, got, want)
		}
	}
}
