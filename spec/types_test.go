package spec

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// typeCase feeds one key a value of the wrong type.
type typeCase struct {
	key  string // the dotted key the message must name
	yaml string
	line int
	want string // what the message must say after "key: "
}

// typeCases has one case for every typed key of the spec (the test below
// checks that none is missing) and some for entries within them.
func typeCases() []typeCase {
	const base = "name: x\nbenchmark:\n  inputs: m:i\n  reference: m:r\n  implementations: {a: m:a}\n"
	top := func(key, y, want string) typeCase { return typeCase{key, base + y + "\n", 6, want} }
	replace := func(key, old, new string, line int, want string) typeCase {
		return typeCase{key, strings.Replace(base, old, new, 1), line, want}
	}
	impl := func(key, im, want string) typeCase {
		return replace("benchmark.implementations.a"+key, "{a: m:a}", "{a: "+im+"}", 5, want)
	}
	crit := func(key, c, want string) typeCase {
		return top("criteria[0]"+key, "criteria:\n  - "+c, want)
	}
	crit2 := func(c typeCase) typeCase { c.line = 7; return c }
	return []typeCase{
		replace("name", "name: x", "name: {a: 1}", 1, `found a mapping; write a single string`),
		top("description", "description: [a, b]", `found a list; write a single string`),
		top("image", "image: [cpu]", `found a list; write a base image name, or a mapping with keys base, torch, cuda, python, apt`),
		top("image.base", "image: {base: [cpu]}", `found a list; write a single string`),
		top("image.torch", "image: {torch: {a: 1}}", `found a mapping; write a single string`),
		top("image.cuda", "image: {cuda: [12.4]}", `found a list; write a single string`),
		top("image.python", "image: {python: triton}", `found "triton"; write a list of pip requirements like [triton, einops]`),
		top("image.apt", "image: {apt: curl}", `found "curl"; write a list of package names like [curl, git]`),
		top("image.apt[1]", "image: {apt: [curl, {a: 1}]}", `found a mapping; write a single string`),
		top("resources", "resources: 4", `found 4; write a mapping with keys gpus, gpu_type, shm, memory, timeout`),
		top("resources.gpus", "resources: {gpus: {a: 1}}", `found a mapping; write a count (2), all, or device ids like [0, 2]`),
		top("resources.gpus[1]", "resources: {gpus: [0, [1]]}", `found a list; write a device index or GPU-<uuid>`),
		top("resources.gpu_type", "resources: {gpu_type: [H100]}", `found a list; write a single string`),
		top("resources.shm", "resources: {shm: [8g]}", `found a list; write a size like 8g or 512m`),
		top("resources.memory", "resources: {memory: {a: 1}}", `found a mapping; write a size like 8g or 512m`),
		top("resources.timeout", "resources: {timeout: [1, 2]}", `found a list; write a duration like 90s, 30m or 1h30m`),
		top("resources.timeout", "resources: {timeout: 30 minutes}", `found "30 minutes"; write a duration like 90s, 30m or 1h30m`),
		top("resources.timeout", "resources: {timeout: 90}", `found 90; write a duration like 90s`),
		top("resources.pids", "resources: {pids: many}", `found "many"; write a whole number of processes, at least 512`),
		top("resources.cpus", "resources: {cpus: two}", `found "two"; write a whole number of CPUs, at least 1`),
		top("include", "include: ../common", `found "../common"; write a list of paths like [../common]`),
		top("env", "env: {A: 1}", `found a mapping; write a list of variable names like [WANDB_API_KEY]`),
		{"benchmark", "name: x\nbenchmark: run.sh\n", 2, `found "run.sh"; write a mapping with keys inputs, reference,`},
		replace("benchmark.inputs", "inputs: m:i", "inputs: [m:i]", 3, `found a list; write module:callable, e.g. gla.inputs:make_inputs`),
		replace("benchmark.reference", "reference: m:r", "reference: {m: r}", 4, `found a mapping; write module:callable`),
		replace("benchmark.implementations", "{a: m:a}", "[m:a]", 5, `found a list; write a mapping of name: module:callable`),
		impl("", "[m:a]", `found a list; write module:callable, or a mapping with keys fn, requires, tolerance, params, note`),
		impl(".fn", "{fn: [m:a]}", `found a list; write module:callable`),
		impl(".requires", "{fn: m:a, requires: gpu}", `found "gpu"; write a list like [triton, sm_90]`),
		impl(".tolerance", "{fn: m:a, tolerance: 0.1}", `found 0.1; write a mapping with keys atol, rtol`),
		impl(".tolerance.atol", "{fn: m:a, tolerance: {atol: big}}", `found "big"; write a number`),
		impl(".tolerance.rtol", "{fn: m:a, tolerance: {rtol: [1]}}", `found a list; write a number`),
		impl(".params", "{fn: m:a, params: [1]}", `found a list; write a mapping of name: value`),
		impl(".params.BLOCK", "{fn: m:a, params: {BLOCK: [64, 128]}}", `found a list; write a single number, string or bool`),
		impl(".note", "{fn: m:a, note: [x]}", `found a list; write a single string`),
		top("benchmark.baseline", "  baseline: [a]", `found a list; write an implementation name`),
		top("benchmark.params", "  params: [1, 2]", `found a list; write a mapping of name: value`),
		top("benchmark.params.B", "  params: {B: [1, 2]}", `found a list; write a single number, string or bool`),
		top("benchmark.params.B", "  params: {B: }", `found nothing; write a single number, string or bool`),
		top("benchmark.sweep", "  sweep: 5", `found 5; write a mapping of name: [values]`),
		top("benchmark.sweep[1]", "  sweep: [{T: [1]}, 5]", `found 5; write a mapping of name: [values]`),
		top("benchmark.sweep.T", "  sweep: {T: [[1]]}", `found a list; write a single number, string or bool`),
		top("benchmark.sweep[0].T", "  sweep: [{T: [{a: 1}]}]", `found a mapping; write a single number, string or bool`),
		top("benchmark.cpu_sweep", "  cpu_sweep: big", `found "big"; write a mapping of name: [values]`),
		top("benchmark.cpu_params", "  cpu_params: 5", `found 5; write a mapping of name: value`),
		top("benchmark.flops", "  flops: {a: 1}", `found a mapping; write module:callable`),
		top("benchmark.bytes", "  bytes: [a]", `found a list; write module:callable`),
		top("benchmark.tokens", "  tokens: [a]", `found a list; write module:callable`),
		top("benchmark.metrics", "  metrics: [a]", `found a list; write module:callable`),
		top("benchmark.time_reference", "  time_reference: maybe", `found "maybe"; write true or false`),
		top("benchmark.tolerance", "  tolerance: 1e-2", `found 1e-2; write a mapping with keys atol, rtol`),
		top("benchmark.tolerance.atol", "  tolerance: {atol: 1e-2%}", `found "1e-2%"; write a number`),
		top("benchmark.tolerance.rtol", "  tolerance: {rtol: [1]}", `found a list; write a number, e.g. 2 or 0.5`),
		top("benchmark.command", "  command: ./bench", `found "./bench"; write a list like [./bench, --fast]`),
		top("benchmark.setup", "  setup: [make]", `found a list; write one shell command as a string`),
		top("benchmark.method", "  method: fast", `found "fast"; write a mapping with keys warmup_ms, min_samples,`),
		top("benchmark.method.warmup_ms", "  method: {warmup_ms: ten}", `found "ten"; write a number, e.g. 2 or 0.5`),
		top("benchmark.method.min_samples", "  method: {min_samples: 1.5}", `found 1.5; write a whole number, e.g. 10`),
		top("benchmark.method.max_samples", "  method: {max_samples: \"10\"}", `found "10"; write a whole number`),
		top("benchmark.method.min_time_s", "  method: {min_time_s: [1]}", `found a list; write a number`),
		top("benchmark.method.max_time_s", "  method: {max_time_s: \"two\"}", `found "two"; write a number, e.g. 2 or 0.5`),
		top("benchmark.method.target_rse", "  method: {target_rse: {a: 1}}", `found a mapping; write a number`),
		top("benchmark.method.rounds", "  method: {rounds: three}", `found "three"; write a whole number`),
		top("benchmark.method.flush_bytes", "  method: {flush_bytes: [1]}", `found a list; write a size like 8g or 512m`),
		top("benchmark.method.flush_bytes", "  method: {flush_bytes: lots}", `size "lots": write a number with a unit`),
		top("benchmark.method.no_flush", "  method: {no_flush: 1}", `found 1; write true or false`),
		top("benchmark.method.trials", "  method: {trials: 2.5}", `found 2.5; write a whole number`),
		top("benchmark.method.impl_timeout", "  method: {impl_timeout: 10}", `found 10; write a duration like 90s`),
		top("benchmark.method.fast_threshold", "  method: {fast_threshold: fast}", `found "fast"; write a number`),
		top("benchmark.method.cuda_graph", "  method: {cuda_graph: sometimes}", `found "sometimes"; write true or false`),
		top("benchmark.method.rest_ratio", "  method: {rest_ratio: half}", `found "half"; write a number`),
		top("benchmark.method.kernel_clock", "  method: {kernel_clock: [true]}", `found a list; write true or false`),
		top("benchmark.method.kernel_clock_max_ms", "  method: {kernel_clock_max_ms: 0.1ms}", `found "0.1ms"; write a number`),
		top("benchmark.method.retune", "  method: {retune: always}", `found "always"; write true or false`),
		top("criteria", "criteria: {correct: all}", `found a mapping; write a list of mappings with keys name, speedup,`),
		crit2(crit("", "correct", `found "correct"; write a mapping with keys name, speedup,`)),
		crit2(crit(".name", "{correct: all, name: [a]}", `found a list; write a single string`)),
		crit2(crit(".speedup", "{speedup: [a], over: a, at_least: 1}", `found a list; write an implementation name`)),
		crit2(crit(".over", "{speedup: a, over: {a: 1}, at_least: 1}", `found a mapping; write an implementation name`)),
		crit2(crit(".at_least", "{speedup: a, over: a, at_least: 20%}", `found "20%"; write a number, e.g. 2 or 0.5`)),
		crit2(crit(".max_error", "{max_error: [a], below: 1}", `found a list; write an implementation name or all`)),
		crit2(crit(".below", "{max_error: all, below: small}", `found "small"; write a number`)),
		crit2(crit(".correct", "{correct: [a]}", `found a list; write an implementation name or all`)),
		crit2(crit(".time", "{time: [a], below_ms: 1}", `found a list; write an implementation name`)),
		crit2(crit(".below_ms", "{time: a, below_ms: 2ms}", `found "2ms"; write a number`)),
		crit2(crit(".for", "{correct: all, for: [all]}", `found a list; write all, any or median`)),
		crit2(crit(".expect", "{correct: all, expect: [fail]}", `found a list; write pass or fail`)),
		crit2(crit(".by", "{speedup: a, over: a, at_least: 1, by: [median]}", `found a list; write median or conservative`)),
	}
}

// TestTypeErrors feeds each key a value of the wrong type: the message
// names the file, the line and the dotted key, what was found and what to
// write instead, and never yaml.v3's own "cannot unmarshal".
func TestTypeErrors(t *testing.T) {
	for _, tc := range typeCases() {
		t.Run(tc.key+"="+strings.TrimSpace(tc.yaml[strings.LastIndex(strings.TrimSpace(tc.yaml), "\n")+1:]), func(t *testing.T) {
			_, err := Parse("xrun.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error for:\n%s", tc.yaml)
			}
			want := "xrun.yaml:" + strconv.Itoa(tc.line) + ": " + tc.key + ": " + tc.want
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error:\n%s\ndoes not contain:\n%s", err, want)
			}
			if strings.Contains(err.Error(), "unmarshal") || strings.Contains(err.Error(), "!!") {
				t.Errorf("yaml.v3's message leaked: %s", err)
			}
		})
	}
}

// TestTypeErrorsCoverEveryKey keeps typeCases complete as keys are added:
// every key of the spec, down to its values, has a case.
func TestTypeErrorsCoverEveryKey(t *testing.T) {
	tested := map[string]bool{}
	index := regexp.MustCompile(`\[\d+\]`)
	for _, tc := range typeCases() {
		tested[index.ReplaceAllString(tc.key, "[0]")] = true
	}
	var walk func(typ reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if path != "" && !tested[path] {
			t.Errorf("no wrong-type case for %s", path)
		}
		switch {
		case typ == typeImpls:
			walk(typeImpl, path+".a")
		case typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.Struct && !hasUnmarshaler(typ):
			walk(typ.Elem(), path+"[0]")
		case typ.Kind() == reflect.Struct && (typ == typeImage || !hasUnmarshaler(typ)):
			for _, k := range yamlKeys(typ) {
				f, _ := fieldByKey(typ, k)
				walk(f.Type, join(path, k))
			}
		}
	}
	walk(reflect.TypeOf(Spec{}), "")
}

func fieldByKey(typ reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < typ.NumField(); i++ {
		if strings.Split(typ.Field(i).Tag.Get("yaml"), ",")[0] == key {
			return typ.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// TestCriterionKeysOfItsKind refuses a key of another kind of criterion,
// which nothing would read, naming the keys the kind takes.
func TestCriterionKeysOfItsKind(t *testing.T) {
	base := "name: x\nbenchmark:\n  inputs: m:i\n  reference: m:r\n  implementations: {a: m:a}\ncriteria:\n"
	for _, tc := range []struct{ criterion, want string }{
		{"{correct: all, below: 0.1}", "xrun.yaml:7: criteria[0].below: not a key of a correct criterion (below belongs to max_error); allowed: name, correct, for"},
		{"{max_error: all, below: 0.1, at_least: 2}", "xrun.yaml:7: criteria[0].at_least: not a key of a max_error criterion (at_least belongs to speedup); allowed: name, max_error, below, for"},
		{"{time: a, below_ms: 1, below: 1}", "criteria[0].below: not a key of a time criterion (below belongs to max_error); allowed: name, time, below_ms, for"},
		{"{speedup: a, over: a, at_least: 1, below_ms: 2}", "criteria[0].below_ms: not a key of a speedup criterion (below_ms belongs to time); allowed: name, speedup, over, at_least, by, for"},
		{"{correct: all, max_error: \"\"}", "criteria[0].max_error: not a key of a correct criterion"},
	} {
		_, err := Parse("xrun.yaml", []byte(base+"  - "+tc.criterion+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.criterion, err, tc.want)
		}
	}
	for _, ok := range []string{
		"{name: fast, speedup: a, over: reference, at_least: 1.2, for: median}",
		"{max_error: all, below: 1e-2, for: any}",
		"{correct: all, for: all}",
		"{time: a, below_ms: 2.5}",
	} {
		if _, err := Parse("xrun.yaml", []byte(base+"  - "+ok+"\n")); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
