// Command scalegen writes synthetic results.json files as large as a run
// may make them, for scripts/scale-bench.sh: CASES cases (at most the
// spec's case cap) of IMPLS implementations and the reference, every one
// timed, compared with the baseline, with kept samples and a warning on
// some, as the runner writes them.
//
//	go run ./scripts/scalegen -cases 10000 -impls 10 -runs 10 -out DIR
//
// writes DIR/run-01/results.json ... DIR/run-10/results.json, one job
// each, a day apart.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

func main() {
	cases := flag.Int("cases", spec.MaxCases, "cases per run")
	impls := flag.Int("impls", 10, "implementations per case, besides the reference")
	runs := flag.Int("runs", 1, "runs (one results.json each)")
	out := flag.String("out", "", "directory to write run-NN/results.json into")
	flag.Parse()
	if *out == "" {
		log.Fatal("scalegen: give -out DIR")
	}
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	for i := range *runs {
		r := flat.Synthetic(*cases, *impls, fmt.Sprintf("scale%04d", i+1), start.Add(time.Duration(i)*24*time.Hour), uint64(i))
		dir := filepath.Join(*out, fmt.Sprintf("run-%02d", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			log.Fatal(err)
		}
		if err := result.WriteFile(filepath.Join(dir, result.FileName), r); err != nil {
			log.Fatal(err)
		}
	}
}
