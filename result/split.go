package result

import (
	"fmt"
	"strconv"
	"strings"
)

// Split is the share of the sweep a run holds when the sweep was split
// over several jobs. Part k of Parts runs the cases whose index i (from 0,
// in the sweep's order) has i % Parts == k-1; a gathered run holds every
// case again, in the sweep's order, with Part 0 and Jobs naming the parts.
type Split struct {
	Part  int `json:"part,omitempty"`
	Parts int `json:"parts"`
	// Jobs are the parts' jobs, in part order (a gathered run's).
	Jobs []SplitJob `json:"jobs,omitempty"`
}

// SplitJob is one part of a gathered run: the job that ran it, where, and
// how it ended.
type SplitJob struct {
	Part   int    `json:"part"`
	JobID  string `json:"job_id"`
	Host   string `json:"host"`
	Status string `json:"status"`
	// GPUs are the models of the GPUs the part ran on.
	GPUs []string `json:"gpus,omitempty"`
}

// Takes reports whether part k of n runs the sweep's case i (from 0).
func (s *Split) Takes(i int) bool { return s == nil || s.Parts <= 1 || i%s.Parts == s.Part-1 }

// ParseSplit reads "K/N" (contract.EnvSplit): part K of N, 1 <= K <= N.
// "" is no split (nil).
func ParseSplit(s string) (*Split, error) {
	if s == "" {
		return nil, nil
	}
	k, n, ok := strings.Cut(s, "/")
	part, err1 := strconv.Atoi(k)
	parts, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || parts < 1 || part < 1 || part > parts || parts > MaxSplit {
		return nil, fmt.Errorf("split %q: give K/N, part K of N parts, with 1 <= K <= N <= %d", s, MaxSplit)
	}
	return &Split{Part: part, Parts: parts}, nil
}

// MaxSplit is the most parts a sweep may be split into.
const MaxSplit = 256

// String is "K/N".
func (s *Split) String() string { return fmt.Sprintf("%d/%d", s.Part, s.Parts) }

// Every names the cases of part K of N, from 1: "cases 2, 6, 10, ...".
func (s *Split) Every() string {
	return fmt.Sprintf("cases %d, %d, %d, ...", s.Part, s.Part+s.Parts, s.Part+2*s.Parts)
}
