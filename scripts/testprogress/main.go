// Command testprogress reads `go test -json` on stdin and writes what a
// person watching `make test` needs: a line per package as it ends (ok,
// FAIL, or no tests), the whole output of a package that failed, and a
// line at least every 30 s saying which packages still run and for how
// long, so that a long integration suite is never silent. Its exit code is
// 1 when a package failed or the stream ended without a package's end.
//
//	go test -json ./... | go run ./scripts/testprogress
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

type pkg struct {
	start  time.Time
	output []string
	test   string // the test running last
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout, 30*time.Second))
}

func run(in io.Reader, out io.Writer, every time.Duration) int {
	var mu sync.Mutex
	running := map[string]*pkg{}
	failed, passed := 0, 0
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				mu.Lock()
				var names []string
				for name, p := range running {
					s := fmt.Sprintf("%s (%s", name, time.Since(p.start).Round(time.Second))
					if p.test != "" {
						s += ", " + p.test
					}
					names = append(names, s+")")
				}
				sort.Strings(names)
				if len(names) > 0 {
					fmt.Fprintf(out, "still running: %s\n", strings.Join(names, "; "))
				}
				mu.Unlock()
			}
		}
	}()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		err := json.Unmarshal(sc.Bytes(), &e)
		if err == nil && e.Action == "build-fail" {
			continue // the package's own fail event follows
		}
		if err == nil && e.Action == "build-output" {
			// A package that does not compile: the compiler's words.
			mu.Lock()
			fmt.Fprint(out, e.Output)
			mu.Unlock()
			continue
		}
		if err != nil || e.Package == "" {
			// Not an event (a build error printed as text): pass it on.
			mu.Lock()
			fmt.Fprintln(out, sc.Text())
			mu.Unlock()
			continue
		}
		mu.Lock()
		p := running[e.Package]
		if p == nil {
			p = &pkg{start: time.Now()}
			running[e.Package] = p
		}
		switch {
		case e.Action == "output":
			p.output = append(p.output, e.Output)
		case e.Action == "run" && e.Test != "":
			p.test = e.Test
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			delete(running, e.Package)
			switch e.Action {
			case "fail":
				failed++
				fmt.Fprint(out, strings.Join(p.output, ""))
				fmt.Fprintf(out, "FAIL %s (%.1f s)\n", e.Package, e.Elapsed)
			case "skip":
				fmt.Fprintf(out, "ok   %s (no tests)\n", e.Package)
			default:
				passed++
				fmt.Fprintf(out, "ok   %s (%.1f s)\n", e.Package, e.Elapsed)
			}
		}
		mu.Unlock()
	}
	close(done)
	mu.Lock()
	defer mu.Unlock()
	for name, p := range running {
		// A package whose end never came: its binary crashed or the run
		// was cut short. Its output says why.
		fmt.Fprint(out, strings.Join(p.output, ""))
		fmt.Fprintf(out, "FAIL %s (no end in the test stream)\n", name)
		failed++
	}
	fmt.Fprintf(out, "%d package(s) passed, %d failed\n", passed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}
