// Package images holds the base images experiments build on: the
// compatibility table (torch version -> CUDA -> base image, embedded from
// compat.json) and pure lookups over it. The Dockerfiles that make the
// images, and the script that makes a CPU base without a registry, sit
// beside this file.
package images

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/xrun-dev/xrun/spec"
)

// LabelCUDA is the label a base image carries with the CUDA version inside
// ("13.0"); images without it are read by their CUDA_VERSION variable.
const LabelCUDA = "dev.xrun.cuda"

//go:embed compat.json
var compatJSON []byte

// Image is one row of the compatibility table.
type Image struct {
	// Ref is the image reference experiments build on.
	Ref string `json:"ref"`
	// Torch, CUDA, Python and Triton are the versions inside; CUDA is
	// empty for a CPU image, Torch for an image without PyTorch.
	Torch  string `json:"torch,omitempty"`
	CUDA   string `json:"cuda,omitempty"`
	Python string `json:"python"`
	Triton string `json:"triton,omitempty"`
	// From is the upstream image the Dockerfile starts from.
	From string `json:"from,omitempty"`
	// Dockerfile is the directory under images/ holding its Dockerfile.
	Dockerfile string `json:"dockerfile,omitempty"`
	// Script is the command under images/ that makes it without a registry.
	Script string `json:"script,omitempty"`
}

// CPU reports whether the image has no CUDA.
func (im Image) CPU() bool { return im.CUDA == "" }

// HowToMake says how to make the image on a host: the docker build of its
// Dockerfile, or the script, run from the repository root. The CUDA bases
// share one Dockerfile, which takes the row's upstream image and CUDA
// version as build arguments.
func (im Image) HowToMake() string {
	if im.Dockerfile == "" {
		return "images/" + im.Script
	}
	args := ""
	if !im.CPU() {
		args = fmt.Sprintf(" --build-arg FROM=%s --build-arg CUDA=%s", im.From, im.CUDA)
	}
	return fmt.Sprintf("docker build -t %s%s images/%s", im.Ref, args, im.Dockerfile)
}

func (im Image) String() string {
	torch := "no torch"
	if im.Torch != "" {
		torch = "torch " + im.Torch
	}
	cuda := "CPU"
	if !im.CPU() {
		cuda = "CUDA " + im.CUDA
	}
	return fmt.Sprintf("%s, %s, Python %s (%s)", torch, cuda, im.Python, im.Ref)
}

// Table is the compatibility table.
type Table struct {
	// Default and DefaultCPU name the bases used when the spec names none.
	Default    string `json:"default"`
	DefaultCPU string `json:"default_cpu"`
	// Bases maps the names a spec may use as image.base to references.
	Bases map[string]string `json:"bases"`
	// Images are the rows, most preferred first.
	Images []Image `json:"images"`
	// Drivers are the oldest NVIDIA drivers (Linux) that run each CUDA
	// major release, from NVIDIA's minor version compatibility table: a
	// driver runs every CUDA major whose minimum it meets (and older ones).
	Drivers []Driver `json:"drivers"`
}

// Driver is one row of the driver table.
type Driver struct {
	CUDAMajor int    `json:"cuda_major"`
	MinDriver string `json:"min_driver"`
}

var table = mustLoad(compatJSON)

func mustLoad(b []byte) *Table {
	t, err := Load(b)
	if err != nil {
		panic(err)
	}
	return t
}

// Load decodes and checks a table in compat.json's format.
func Load(b []byte) (*Table, error) {
	var t Table
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("decode the image compatibility table: %w", err)
	}
	refs := map[string]bool{}
	for _, im := range t.Images {
		if im.Ref == "" || refs[im.Ref] {
			return nil, fmt.Errorf("image compatibility table: row %q is empty or repeated", im.Ref)
		}
		if (im.Dockerfile == "") == (im.Script == "") {
			return nil, fmt.Errorf("image compatibility table: row %s needs exactly one of dockerfile and script", im.Ref)
		}
		refs[im.Ref] = true
	}
	for name, ref := range t.Bases {
		if !refs[ref] {
			return nil, fmt.Errorf("image compatibility table: base %s names %s, which has no row", name, ref)
		}
	}
	for _, d := range t.Drivers {
		if d.CUDAMajor <= 0 || parseVersion(d.MinDriver) == nil {
			return nil, fmt.Errorf("image compatibility table: driver row %+v needs a CUDA major and a driver version", d)
		}
	}
	for _, name := range []string{t.Default, t.DefaultCPU} {
		if _, ok := t.Bases[name]; !ok {
			return nil, fmt.Errorf("image compatibility table: default base %q is not in bases", name)
		}
	}
	return &t, nil
}

// Default returns the embedded table.
func Default() *Table { return table }

// Resolve picks the base image reference for an experiment's image
// section from the embedded table; see Table.Resolve.
func Resolve(img spec.Image, cpu bool) (string, error) { return table.Resolve(img, cpu) }

// Named reports whether name is one of the embedded table's base names.
func Named(name string) bool { _, ok := table.Bases[name]; return ok }

// Lookup returns the embedded table's row for an image reference.
func Lookup(ref string) (Image, bool) { return table.Lookup(ref) }

// Resolve picks the base image reference for img:
//   - Base set: a named base gives its reference (Torch and CUDA, when
//     also set, must agree with it); anything else is an image reference
//     used as it is.
//   - Torch and/or CUDA set: the first row matching them; a version
//     matches when its components are a prefix of the row's ("2.11" matches
//     2.11.0). Without CUDA, a GPU row is picked, or a CPU row when cpu is
//     true; CUDA "cpu" asks for a CPU row.
//   - Nothing set: the default base, or the default CPU base when cpu.
//
// An unknown name or combination is an error that lists the options.
func (t *Table) Resolve(img spec.Image, cpu bool) (string, error) {
	if img.Base != "" {
		ref, named := t.Bases[img.Base]
		if !named {
			if img.Torch != "" || img.CUDA != "" {
				return "", fmt.Errorf("image.base %q is an image reference, and image.torch/image.cuda only pick a base from xrun's table (%s); remove one or the other", img.Base, t.baseNames())
			}
			return img.Base, nil
		}
		if img.Torch != "" || img.CUDA != "" {
			row, _ := t.Lookup(ref)
			if !matches(row, img.Torch, img.CUDA) {
				return "", fmt.Errorf("image.base %s has %s, which does not match image.torch %q / image.cuda %q; change or remove them", img.Base, row, img.Torch, img.CUDA)
			}
			return ref, nil
		}
		if row, ok := t.Lookup(ref); cpu && ok && !row.CPU() {
			// A CPU run executes the CPU sweep, which needs no CUDA: a
			// named GPU base stands for "the table's base", so take its
			// CPU counterpart rather than a multi-gigabyte CUDA image.
			return t.Bases[t.DefaultCPU], nil
		}
		return ref, nil
	}
	if img.Torch == "" && img.CUDA == "" {
		if cpu {
			return t.Bases[t.DefaultCPU], nil
		}
		return t.Bases[t.Default], nil
	}
	wantCPU := cpu
	if img.CUDA != "" {
		wantCPU = strings.EqualFold(img.CUDA, "cpu")
	}
	for _, row := range t.Images {
		if matches(row, img.Torch, img.CUDA) && row.CPU() == wantCPU {
			return row.Ref, nil
		}
	}
	var want []string
	if img.Torch != "" {
		want = append(want, "torch "+img.Torch)
	}
	switch {
	case img.CUDA != "" && !wantCPU:
		want = append(want, "CUDA "+img.CUDA)
	case wantCPU:
		want = append(want, "CPU")
	default:
		want = append(want, "a GPU")
	}
	return "", fmt.Errorf("no base image with %s; known: %s; or set image.base to any image reference", strings.Join(want, " and "), t.options())
}

// matches reports whether row has the torch and CUDA versions asked for;
// an empty one asks for nothing and CUDA "cpu" asks for no CUDA.
func matches(row Image, torch, cuda string) bool {
	if torch != "" && !versionMatches(torch, row.Torch) {
		return false
	}
	switch {
	case cuda == "":
		return true
	case strings.EqualFold(cuda, "cpu"):
		return row.CPU()
	}
	return !row.CPU() && versionMatches(cudaVersion(cuda), row.CUDA)
}

var wheelTagRE = regexp.MustCompile(`^cu(\d+)(\d)$`)

// cudaVersion accepts PyTorch's wheel tags too: "cu128" is CUDA 12.8.
func cudaVersion(s string) string {
	if m := wheelTagRE.FindStringSubmatch(strings.ToLower(s)); m != nil {
		return m[1] + "." + m[2]
	}
	return s
}

// versionMatches reports whether want's dot-separated components are a
// prefix of have's: "2", "2.11" and "2.11.0" match "2.11.0"; "2.1" does not.
func versionMatches(want, have string) bool {
	if have == "" {
		return false
	}
	w := strings.Split(strings.TrimPrefix(want, "v"), ".")
	h := strings.Split(have, ".")
	return len(w) <= len(h) && slices.Equal(w, h[:len(w)])
}

// Lookup returns the row for an image reference.
func (t *Table) Lookup(ref string) (Image, bool) {
	for _, im := range t.Images {
		if im.Ref == ref {
			return im, true
		}
	}
	return Image{}, false
}

// Names returns the base names, sorted.
func (t *Table) Names() []string {
	names := make([]string, 0, len(t.Bases))
	for n := range t.Bases {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (t *Table) baseNames() string { return strings.Join(t.Names(), ", ") }

func (t *Table) options() string {
	rows := make([]string, len(t.Images))
	for i, im := range t.Images {
		rows[i] = im.String()
	}
	return strings.Join(rows, "; ") + "; named bases: " + t.baseNames()
}

// CheckDriver says whether a host's NVIDIA driver (nvidia-smi's
// driver_version, "580.159.04") runs code built with CUDA cuda ("13.0",
// "12.8.1"); the error says what to do. An unknown version on either side
// is not refused: the runtime then has the last word.
func CheckDriver(cuda, driver string) error { return table.CheckDriver(cuda, driver) }

// CheckDriver is the package function over t.
func (t *Table) CheckDriver(cuda, driver string) error {
	c, d := parseVersion(cudaVersion(cuda)), parseVersion(driver)
	if c == nil || d == nil || len(t.Drivers) == 0 {
		return nil
	}
	newest := 0 // the newest CUDA major the driver runs
	for _, row := range t.Drivers {
		if compareVersions(d, parseVersion(row.MinDriver)) >= 0 && row.CUDAMajor > newest {
			newest = row.CUDAMajor
		}
	}
	if c[0] <= newest {
		return nil
	}
	need := "a newer driver than any this table knows"
	for _, row := range t.Drivers {
		if row.CUDAMajor == c[0] {
			need = "driver " + row.MinDriver + " or newer"
		}
	}
	if newest == 0 {
		return fmt.Errorf("the image is built for CUDA %s, which needs %s; the host's NVIDIA driver %s is older than any CUDA this table knows: update the driver", cuda, need, driver)
	}
	return fmt.Errorf("the image is built for CUDA %s, which needs %s; the host's NVIDIA driver %s runs CUDA %d and older: update the driver there, or build on a CUDA %d base (image.base: cuda%d-torch, or image.cuda)", cuda, need, driver, newest, newest, newest)
}

// parseVersion reads "580.159.04" or "13.0" as numbers; nil if it is not one.
func parseVersion(s string) []int {
	s = strings.TrimSpace(strings.TrimPrefix(s, "v"))
	if s == "" {
		return nil
	}
	var out []int
	for _, part := range strings.Split(s, ".") {
		n := 0
		if part == "" {
			return nil
		}
		for _, r := range part {
			if r < '0' || r > '9' {
				return nil
			}
			n = n*10 + int(r-'0')
		}
		out = append(out, n)
	}
	return out
}

// compareVersions orders two parsed versions; missing components count as 0.
func compareVersions(a, b []int) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}
