//go:build integration

package k8s

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
)

// checking is the progress line of a case's check, as logs shows it.
var checking = regexp.MustCompile(`progress: case (\d)/9, checking`)

// A job of about three minutes, far past any request's timeout, is
// followed to its end by logs -f and by an attached submit: each gets the
// job's lines as the runner prints them (a progress line at each of its
// nine cases), minutes apart, and ends with the job, logs -f with its exit
// code and the submit with its table.
func TestFollowAThreeMinuteJob(t *testing.T) {
	d := submit(t, 5*time.Minute, "long", "--cpu", "-d", "-q")
	expect(t, d, 0)
	id := strings.TrimSpace(d.Stdout)

	// logs -f, each line timed as it arrives.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, x.Bin, "logs", "-f", id)
	cmd.Env = x.Env()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &xruntest.LockedBuffer{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := checking.FindStringSubmatch(sc.Text()); m != nil {
				mu.Lock()
				arrived[m[1]] = time.Now()
				mu.Unlock()
			}
		}
	}()

	// Meanwhile an attached submit of the same experiment, to its end.
	start := time.Now()
	r := submit(t, 8*time.Minute, "long", "--cpu")
	took := time.Since(start)
	expect(t, r, 0, "progress: case 9/9")
	if took < 2*time.Minute {
		t.Errorf("the attached submit returned after %v, before its job of about three minutes could end", took)
	}
	if !strings.Contains(r.Stdout, "same") {
		t.Errorf("no results table on stdout:\n%s", r.Stdout)
	}

	<-read
	err = cmd.Wait()
	if err != nil {
		t.Fatalf("logs -f %s: %v\nstderr:\n%s", id, err, cmd.Stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	for c := 1; c <= 9; c++ {
		if _, ok := arrived[fmt.Sprint(c)]; !ok {
			t.Errorf("logs -f never showed the progress line of case %d/9 (it showed %d of them)", c, len(arrived))
		}
	}
	first, last := arrived["1"], arrived["9"]
	if !first.IsZero() && !last.IsZero() && last.Sub(first) < 2*time.Minute {
		t.Errorf("logs -f showed the first and the last case %v apart, not as the job printed them (over 2 minutes apart)", last.Sub(first))
	}
	if s := x.Status(t, id); s.Status != "succeeded" {
		t.Errorf("status %+v", s)
	}
	expect(t, x.Run(t, time.Minute, "rm", id), 0)
}
