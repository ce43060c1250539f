package cli

import (
	"os"
	"testing"
	"time"
)

func TestStdoutClosedSeesTheReaderGo(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	closed := stdoutClosed(w)
	if closed == nil {
		t.Fatal("a pipe is not watched")
	}
	select {
	case <-closed:
		t.Fatal("closed while the reader is there")
	case <-time.After(50 * time.Millisecond):
	}
	r.Close()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the reader's close was not seen")
	}
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if stdoutClosed(f) != nil {
		t.Error("a file is watched")
	}
}
