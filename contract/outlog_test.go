package contract

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func files(t *testing.T, data []byte) map[string]string {
	t.Helper()
	got := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if h.Typeflag == tar.TypeReg {
			got[h.Name] = string(b)
		}
	}
}

func outDir(t *testing.T, logBytes int) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"status":"succeeded"}`), 0o644)
	os.MkdirAll(filepath.Join(dir, "logs"), 0o755)
	noise := make([]byte, logBytes)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(r.UintN(256)) // incompressible
	}
	os.WriteFile(filepath.Join(dir, "logs", "w.log"), noise, 0o644)
	return dir
}

func TestRoundTripAmidOtherLines(t *testing.T) {
	dir := outDir(t, 1000)
	var frame bytes.Buffer
	if err := WriteOut(&frame, dir); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(frame.String(), "\n")
	// Other output before, after and inside the frame.
	log := "starting\n" + strings.Join(lines[:3], "") + "a stray stderr line\n" + strings.Join(lines[3:], "") + "bye\n"
	data, rest, err := ExtractOut([]byte(log))
	if err != nil {
		t.Fatal(err)
	}
	got := files(t, data)
	if got["out/results.json"] != `{"status":"succeeded"}` || len(got["out/logs/w.log"]) != 1000 {
		t.Errorf("files: %v", len(got))
	}
	if string(rest) != "starting\na stray stderr line\nbye\n" {
		t.Errorf("rest = %q", rest)
	}
	var shown bytes.Buffer
	f := FilterOut(&shown)
	for _, c := range []byte(log) { // byte by byte: lines split across writes
		f.Write([]byte{c})
	}
	f.Close()
	if shown.String() != string(rest) {
		t.Errorf("filtered = %q", shown.String())
	}
}

func TestTruncatedFrameIsAnError(t *testing.T) {
	var frame bytes.Buffer
	if err := WriteOut(&frame, outDir(t, 5000)); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(frame.String(), "\n")
	cut := strings.Join(append(append([]string{}, lines[:2]...), lines[len(lines)-2:]...), "")
	if _, _, err := ExtractOut([]byte(cut)); err == nil || !strings.Contains(err.Error(), "mid-frame") {
		t.Errorf("a frame missing lines: %v", err)
	}
	if _, _, err := ExtractOut([]byte("no frame here\n")); !errors.Is(err, ErrNoOutFrame) {
		t.Errorf("no frame: %v", err)
	}
}

func TestLargeLogsAreLeftOut(t *testing.T) {
	var frame bytes.Buffer
	if err := WriteOut(&frame, outDir(t, OutMaxBytes+1000)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.SplitN(frame.String(), "\n", 2)[0], "left-out=logs/") {
		t.Errorf("begin line does not say logs/ were left out: %.80s", frame.String())
	}
	data, _, err := ExtractOut(frame.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got := files(t, data)
	if _, ok := got["out/logs/w.log"]; ok || got["out/results.json"] == "" {
		t.Errorf("files: %v", got)
	}
}
