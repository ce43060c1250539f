package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

const stream = `{"ImportPath":"d [d.test]","Action":"build-output","Output":"./x_test.go:3:40: cannot use \"s\"\n"}
{"ImportPath":"d [d.test]","Action":"build-fail"}
{"Action":"fail","Package":"d","Elapsed":0,"FailedBuild":"d [d.test]"}
{"Action":"start","Package":"a"}
{"Action":"run","Package":"a","Test":"TestX"}
{"Action":"output","Package":"a","Test":"TestX","Output":"--- FAIL: TestX\n"}
{"Action":"fail","Package":"a","Test":"TestX","Elapsed":0.1}
{"Action":"output","Package":"a","Output":"FAIL\n"}
{"Action":"fail","Package":"a","Elapsed":0.2}
{"Action":"start","Package":"b"}
{"Action":"output","Package":"b","Output":"quiet when it passes\n"}
{"Action":"pass","Package":"b","Elapsed":1.5}
{"Action":"start","Package":"c"}
{"Action":"output","Package":"c","Output":"panic: boom\n"}
`

// A failed package's output is shown, a passed one's is not, a package
// whose end never came fails, and the exit code says so.
func TestSummary(t *testing.T) {
	var out bytes.Buffer
	if code := run(strings.NewReader(stream), &out, time.Hour); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	got := out.String()
	for _, want := range []string{"--- FAIL: TestX", "FAIL a (0.2 s)", "ok   b (1.5 s)", "panic: boom", "FAIL c (no end in the test stream)", "1 package(s) passed, 3 failed", "./x_test.go:3:40: cannot use \"s\"\n", "FAIL d"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet when it passes") {
		t.Errorf("a passed package's output was shown:\n%s", got)
	}
}

// While a package runs, a line says so at every tick.
func TestHeartbeat(t *testing.T) {
	pr, pw := io.Pipe()
	var out syncBuf
	done := make(chan int)
	go func() { done <- run(pr, &out, 20*time.Millisecond) }()
	io.WriteString(pw, `{"Action":"start","Package":"slow"}`+"\n"+`{"Action":"run","Package":"slow","Test":"TestLong"}`+"\n")
	time.Sleep(100 * time.Millisecond)
	io.WriteString(pw, `{"Action":"pass","Package":"slow","Elapsed":0.1}`+"\n")
	pw.Close()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
	if !strings.Contains(out.String(), "still running: slow (") || !strings.Contains(out.String(), "TestLong)") {
		t.Errorf("no heartbeat:\n%s", out.String())
	}
}

// syncBuf is written by run under its own lock and read once run ended.
type syncBuf struct{ b bytes.Buffer }

func (s *syncBuf) Write(p []byte) (int, error) { return s.b.Write(p) }
func (s *syncBuf) String() string              { return s.b.String() }
