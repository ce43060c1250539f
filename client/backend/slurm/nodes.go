package slurm

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// sinfoNodes lists each node of each partition: name, partition (the
// default one marked *), state, memory (MiB), generic resources, features
// and the reason it is drained or down. The reason comes last: it is free
// text.
const sinfoNodes = "sinfo -h -N -o '%N|%P|%T|%m|%G|%f|%E'"

// node is one node of a partition, as sinfo lists it.
type node struct {
	name, state, reason string
	memMiB              int64
	// gpus are the node's GPUs by gres type ("" for untyped ones).
	gpus     map[string]int
	features []string
}

// request is what a job asks of a node, as its #SBATCH lines say.
type request struct {
	gpus       int
	gpuType    string
	memMiB     int64
	constraint string
}

// parseNodes reads sinfoNodes' lines for partition ("": the default
// one): its name and nodes.
func parseNodes(sinfo, partition string) (string, []node) {
	var name string
	var nodes []node
	for _, line := range strings.Split(sinfo, "\n") {
		f := strings.SplitN(strings.TrimSpace(line), "|", 7)
		if len(f) != 7 {
			continue
		}
		p := strings.TrimSuffix(f[1], "*")
		if partition != p && !(partition == "" && strings.HasSuffix(f[1], "*")) {
			continue
		}
		name = p
		n := node{name: f[0], state: f[2], reason: f[6], gpus: gresGPUs(f[4])}
		n.memMiB, _ = strconv.ParseInt(strings.TrimSuffix(f[3], "+"), 10, 64)
		if f[5] != "(null)" && f[5] != "" {
			n.features = strings.Split(f[5], ",")
		}
		if n.reason == "none" {
			n.reason = ""
		}
		nodes = append(nodes, n)
	}
	return name, nodes
}

var gresSockets = regexp.MustCompile(`\([^)]*\)`)

// gresGPUs reads a node's gres ("gpu:a100:4(S:0-1),gpu:2", "(null)"):
// its GPUs by type.
func gresGPUs(gres string) map[string]int {
	gpus := map[string]int{}
	for _, g := range strings.Split(gresSockets.ReplaceAllString(gres, ""), ",") {
		f := strings.Split(g, ":")
		if len(f) < 2 || f[0] != "gpu" {
			continue
		}
		n, err := strconv.Atoi(f[len(f)-1])
		if err != nil {
			continue
		}
		typ := ""
		if len(f) > 2 {
			typ = strings.Join(f[1:len(f)-1], ":")
		}
		gpus[typ] += n
	}
	return gpus
}

// gpuCount is how many GPUs of type typ ("": any) n has.
func (n node) gpuCount(typ string) int {
	if typ != "" {
		return n.gpus[typ]
	}
	total := 0
	for _, c := range n.gpus {
		total += c
	}
	return total
}

// usable reports whether n takes jobs now: not drained, down, failed, in
// maintenance or not responding (a * after the state). A powered-down
// node (~) is one Slurm powers up for a job.
func (n node) usable() bool {
	if strings.HasSuffix(n.state, "*") {
		return false
	}
	switch strings.TrimRight(n.state, "~#!%$@^-") {
	case "idle", "mixed", "allocated", "completing", "planned":
		return true
	}
	return false
}

// fits reports whether n could ever run r, its state aside. A constraint
// that is more than one feature is left to Slurm.
func (n node) fits(r request) bool {
	if r.gpus > 0 && n.gpuCount(r.gpuType) < r.gpus {
		return false
	}
	if r.memMiB > 0 && n.memMiB > 0 && n.memMiB < r.memMiB {
		return false
	}
	if c := r.constraint; c != "" && !strings.ContainsAny(c, "&|,*[]()!") {
		for _, f := range n.features {
			if f == c {
				return true
			}
		}
		return false
	}
	return true
}

// gresType is the cluster's spelling of gpuType (gres types are case
// sensitive to Slurm, gpu_type is not to xrun): the type of a node's
// GPUs equal to it ignoring case, else gpuType as it is.
func gresType(nodes []node, gpuType string) string {
	for _, n := range nodes {
		for t := range n.gpus {
			if t != "" && strings.EqualFold(t, gpuType) {
				return t
			}
		}
	}
	return gpuType
}

// waitLine is, for a job of r that sbatch --test-only refused as "Requested
// node configuration is not available", the line that says why Slurm
// would queue it all the same: nodes of the partition that could run it
// are drained, down or not responding, and none that takes jobs could.
// "" when that is not so.
func waitLine(part string, nodes []node, r request) string {
	var fit []node
	for _, n := range nodes {
		if !n.fits(r) {
			continue
		}
		if n.usable() {
			return ""
		}
		fit = append(fit, n)
	}
	if len(fit) == 0 {
		return ""
	}
	var why []string
	for _, n := range fit {
		s := n.name + " is " + stateWords(n.state)
		if n.reason != "" {
			s += " (" + n.reason + ")"
		}
		why = append(why, s)
	}
	them := "it"
	if len(fit) > 1 {
		them = "one of them"
	}
	return fmt.Sprintf("Slurm partition %s: node %s; the job waits for %s", part, strings.Join(why, ", node "), them)
}

// stateWords is a node state as a user reads it ("down*": "down and not
// responding").
func stateWords(state string) string {
	base := strings.TrimRight(state, "*~#!%$@^-")
	if strings.HasSuffix(state, "*") {
		if base == "idle" || base == "mixed" || base == "allocated" {
			return "not responding"
		}
		return base + " and not responding"
	}
	return base
}

// missing says what no node of the partition has for a job of r: the GPUs,
// their type, the memory, the feature, or all of them together; "" when a
// node has all of it.
func missing(nodes []node, r request) string {
	if len(nodes) == 0 {
		return ""
	}
	for _, n := range nodes {
		if n.fits(r) {
			return ""
		}
	}
	var gpus, mem int64
	types := map[string]bool{}
	typed := false
	for _, n := range nodes {
		gpus = max(gpus, int64(n.gpuCount(r.gpuType)))
		mem = max(mem, n.memMiB)
		for t := range n.gpus {
			if t != "" {
				types[t] = true
				typed = typed || t == r.gpuType
			}
		}
	}
	var lack []string
	switch {
	case r.gpus > 0 && r.gpuType != "" && !typed:
		have := "no typed GPUs"
		if len(types) > 0 {
			have = "GPUs of type " + strings.Join(sortedKeys(types), ", ")
		}
		lack = append(lack, fmt.Sprintf("the job asks for GPUs of type %s and its nodes have %s", r.gpuType, have))
	case r.gpus > 0 && int64(r.gpus) > gpus:
		what := "GPU"
		if r.gpuType != "" {
			what = r.gpuType + " GPU"
		}
		have := fmt.Sprintf("the most a node of it has is %d", gpus)
		if gpus == 0 {
			have = "none of its nodes has any (gres gpu)"
		}
		lack = append(lack, fmt.Sprintf("the job asks for %s and %s", plural(r.gpus, what), have))
	}
	if r.memMiB > 0 && mem > 0 && r.memMiB > mem {
		lack = append(lack, fmt.Sprintf("the job asks for %d MiB of memory and the most a node of it has is %d MiB", r.memMiB, mem))
	}
	if len(lack) == 0 && r.constraint != "" && !strings.ContainsAny(r.constraint, "&|,*[]()!") {
		has := false
		for _, n := range nodes {
			for _, f := range n.features {
				has = has || f == r.constraint
			}
		}
		if !has {
			lack = append(lack, fmt.Sprintf("no node of it has the feature %s (--constraint)", r.constraint))
		}
	}
	if len(lack) == 0 {
		return "no node of it has all the job asks for together"
	}
	return strings.Join(lack, "; ")
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// plural is "1 GPU", "2 GPUs".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
