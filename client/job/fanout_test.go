package job

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes Run makes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestFanOut(t *testing.T) {
	var out syncBuffer
	hosts := []string{"lab", "cloud-a100", "desk"}
	start := time.Now()
	res := FanOut(context.Background(), hosts, &out, func(ctx context.Context, h string, w io.Writer) (string, error) {
		for i := 0; i < 50; i++ {
			// Partial writes must still come out as whole lines.
			fmt.Fprintf(w, "%s step ", h)
			fmt.Fprintf(w, "%d\n", i)
		}
		time.Sleep(200 * time.Millisecond)
		if h == "cloud-a100" {
			return "", errors.New("cannot reach Docker host cloud-a100 (tcp://1.2.3.4:2376): connection refused\nmore")
		}
		fmt.Fprint(w, "done without a newline")
		return "job-" + h, nil
	})
	if d := time.Since(start); d > 550*time.Millisecond {
		t.Fatalf("hosts ran one after another (%v)", d)
	}
	for i, h := range hosts {
		if res[i].Host != h {
			t.Fatalf("result %d is for %s, want %s", i, res[i].Host, h)
		}
	}
	if res[0].Value != "job-lab" || res[2].Value != "job-desk" || res[1].Err == nil {
		t.Fatalf("results: %+v", res)
	}
	if FailedHosts(res) != 1 {
		t.Fatalf("Failed = %d", FailedHosts(res))
	}
	err := HostErrors(res)
	var he *HostError
	if !errors.As(err, &he) || he.Host != "cloud-a100" {
		t.Fatalf("Err = %v", err)
	}
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		prefix, rest, ok := strings.Cut(line, " | ")
		if !ok {
			t.Fatalf("line without a host prefix: %q", line)
		}
		h := strings.TrimSpace(prefix)
		if len(prefix) != len("cloud-a100") {
			t.Fatalf("prefix not aligned: %q", line)
		}
		if strings.HasPrefix(rest, h+" step ") || rest == "done without a newline" ||
			rest == "failed: cannot reach Docker host cloud-a100 (tcp://1.2.3.4:2376): connection refused" {
			counts[h]++
			continue
		}
		t.Fatalf("mixed or torn line: %q", line)
	}
	if counts["lab"] != 51 || counts["desk"] != 51 || counts["cloud-a100"] != 51 {
		t.Fatalf("line counts %v", counts)
	}
}

func TestHostError(t *testing.T) {
	if got := (&HostError{Host: "lab", Err: errors.New("boom")}).Error(); got != "host lab: boom" {
		t.Fatal(got)
	}
	// A message that names the host already is kept as it is.
	if got := (&HostError{Host: "lab", Err: errors.New("cannot reach Docker host lab")}).Error(); got != "cannot reach Docker host lab" {
		t.Fatal(got)
	}
	if HostErrors([]HostResult[int]{{Host: "a"}, {Host: "b"}}) != nil {
		t.Fatal("no failures should be nil")
	}
}

// HostErrors joins the failures as "host: error", or returns nil when every host
// succeeded.
func HostErrors[T any](results []HostResult[T]) error {
	var errs []error
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, &HostError{Host: r.Host, Err: r.Err})
		}
	}
	return errors.Join(errs...)
}

// FailedHosts counts the hosts that failed.
func FailedHosts[T any](results []HostResult[T]) int {
	n := 0
	for _, r := range results {
		if r.Err != nil {
			n++
		}
	}
	return n
}

// HostError is a failure on one host of a fan-out.
type HostError struct {
	Host string
	Err  error
}

func (e *HostError) Error() string {
	msg := e.Err.Error()
	if strings.Contains(msg, e.Host) {
		return msg
	}
	return "host " + e.Host + ": " + msg
}

func (e *HostError) Unwrap() error { return e.Err }
