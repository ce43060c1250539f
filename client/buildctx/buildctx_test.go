package buildctx

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/spec"
)

// tree describes files to create: path -> content; a content starting with
// "->" makes a symlink, a path ending in "/" a directory, and a "*" suffix
// on the path an executable.
type tree map[string]string

func (tr tree) make(t *testing.T, root string) {
	t.Helper()
	// Create in reverse order so walk order differs from creation order.
	keys := make([]string, 0, len(tr))
	for k := range tr {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	slices.Reverse(keys)
	for _, k := range keys {
		v := tr[k]
		mode := os.FileMode(0o644)
		if strings.HasSuffix(k, "*") {
			k, mode = strings.TrimSuffix(k, "*"), 0o755
		}
		p := filepath.Join(root, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(k, "/"):
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(v, "->"):
			if err := os.Symlink(strings.TrimPrefix(v, "->"), p); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(p, []byte(v), mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// setup makes a workspace with an experiment at exp/ and returns its path.
func setup(t *testing.T, tr tree) string {
	t.Helper()
	ws := t.TempDir()
	tr.make(t, ws)
	return filepath.Join(ws, "exp")
}

func dsts(c *Context) []string {
	var out []string
	for _, f := range c.Files {
		d := f.Dst
		switch {
		case f.Mode.IsDir():
			d += "/"
		case f.Link != "":
			d += " -> " + f.Link
		case f.Mode&0o111 != 0:
			d += "*"
		}
		out = append(out, d)
	}
	return out
}

func TestCollect(t *testing.T) {
	base := tree{
		"exp/xrun.yaml":                 "name: x\n",
		"exp/bench.py":                  "print(1)\n",
		"exp/run.sh*":                   "#!/bin/sh\n",
		"exp/sub/data.txt":              "data",
		"exp/empty/":                    "",
		"exp/results/results.json":      "{}",
		"exp/sub/__pycache__/b.pyc":     "pyc",
		"exp/stray.pyc":                 "pyc",
		"exp/.xrun/state":               "s",
		"kernels/gla/__init__.py":       "",
		"kernels/gla/kernel.py":         "k",
		"kernels/gla/tests/test_k.py":   "t",
		"kernels/gla/link.py":           "->kernel.py",
		"kernels/other/gla/__init__.py": "",
		"kernels/util.py":               "u",
	}
	with := func(extra tree) tree {
		out := tree{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name    string
		tree    tree
		include []string
		want    []string
		wantErr string
	}{
		{
			name: "plain experiment with defaults ignored",
			tree: base,
			want: []string{"exp/bench.py", "exp/empty/", "exp/run.sh*", "exp/sub/", "exp/sub/data.txt", "exp/xrun.yaml"},
		},
		{
			name:    "includes land under their basename",
			tree:    base,
			include: []string{"../kernels/gla", "../kernels/util.py"},
			want: []string{"exp/bench.py", "exp/empty/", "exp/gla/", "exp/gla/__init__.py", "exp/gla/kernel.py",
				"exp/gla/link.py -> kernel.py", "exp/gla/tests/", "exp/gla/tests/test_k.py", "exp/run.sh*",
				"exp/sub/", "exp/sub/data.txt", "exp/util.py", "exp/xrun.yaml"},
		},
		{
			name:    "xrunignore wins over dockerignore and reaches into includes",
			tree:    with(tree{"exp/.xrunignore": "# comment\nsub\ngla/tests\n", "exp/.dockerignore": "bench.py\n"}),
			include: []string{"../kernels/gla"},
			want: []string{"exp/bench.py", "exp/empty/", "exp/gla/", "exp/gla/__init__.py",
				"exp/gla/kernel.py", "exp/gla/link.py -> kernel.py", "exp/run.sh*", "exp/xrun.yaml"},
		},
		{
			name: "dockerignore when there is no xrunignore",
			tree: with(tree{"exp/.dockerignore": "*.py\nempty\n"}),
			want: []string{"exp/run.sh*", "exp/sub/", "exp/sub/data.txt", "exp/xrun.yaml"},
		},
		{
			name: "an exclusion brings a default back",
			tree: with(tree{"exp/.xrunignore": "!results\nsub/data.txt\n"}),
			want: []string{"exp/bench.py", "exp/empty/", "exp/results/", "exp/results/results.json", "exp/run.sh*", "exp/sub/", "exp/xrun.yaml"},
		},
		{
			name: "exclusion inside an excluded directory",
			tree: with(tree{"exp/.xrunignore": "sub\n!sub/data.txt\n"}),
			want: []string{"exp/bench.py", "exp/empty/", "exp/run.sh*", "exp/sub/data.txt", "exp/xrun.yaml"},
		},
		{
			name:    "excluding the spec is refused",
			tree:    with(tree{"exp/.xrunignore": "*.yaml\n"}),
			wantErr: "xrun.yaml is excluded",
		},
		{
			name: "symlinks inside are kept, absolute ones made relative",
			tree: with(tree{"exp/sub/l1": "->data.txt", "exp/l2": "->sub", "exp/l3": "->sub/../bench.py"}),
			want: []string{"exp/bench.py", "exp/empty/", "exp/l2 -> sub", "exp/l3 -> bench.py", "exp/run.sh*",
				"exp/sub/", "exp/sub/data.txt", "exp/sub/l1 -> data.txt", "exp/xrun.yaml"},
		},
		{
			name:    "symlink leaving the experiment",
			tree:    with(tree{"exp/out": "->../kernels/util.py"}),
			wantErr: "/exp/out -> ../kernels/util.py leaves the experiment directory",
		},
		{
			name:    "absolute symlink leaving the experiment",
			tree:    with(tree{"exp/passwd": "->/etc/passwd"}),
			wantErr: "-> /etc/passwd leaves",
		},
		{
			name:    "chain of symlinks ending outside",
			tree:    with(tree{"exp/a": "->b", "exp/b": "->../kernels"}),
			wantErr: "leaves the experiment directory",
		},
		{
			name:    "symlink in an include pointing back into the experiment",
			tree:    with(tree{"kernels/gla/back": "->../../exp/bench.py"}),
			include: []string{"../kernels/gla"},
			wantErr: `leaves the include "../kernels/gla"`,
		},
		{
			name:    "missing include",
			tree:    base,
			include: []string{"../kernels/nope"},
			wantErr: `include "../kernels/nope": `,
		},
		{
			name:    "includes colliding on basename",
			tree:    base,
			include: []string{"../kernels/gla", "../kernels/other/gla"},
			wantErr: `includes "../kernels/gla" and "../kernels/other/gla" both land at exp/gla`,
		},
		{
			name:    "include colliding with the experiment",
			tree:    with(tree{"kernels/sub/x.py": "x"}),
			include: []string{"../kernels/sub"},
			wantErr: "lands at exp/sub, which the experiment directory already has",
		},
		{
			name:    "include of an ancestor",
			tree:    base,
			include: []string{".."},
			wantErr: "contains the experiment directory",
		},
		{
			name:    "include inside the experiment is not copied twice",
			tree:    base,
			include: []string{"sub"},
			want:    []string{"exp/bench.py", "exp/empty/", "exp/run.sh*", "exp/sub/", "exp/sub/data.txt", "exp/xrun.yaml"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := setup(t, tc.tree)
			c, err := Collect(dir, &spec.Spec{Include: tc.include}, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := dsts(c); !slices.Equal(got, tc.want) {
				t.Errorf("files:\n got %q\nwant %q", got, tc.want)
			}
			var size int64
			for _, f := range c.Files {
				size += f.Size
				if f.Mode.IsRegular() && len(f.Sum) != 64 {
					t.Errorf("%s: sum %q", f.Dst, f.Sum)
				}
			}
			if c.Bytes != size {
				t.Errorf("Bytes = %d, want %d", c.Bytes, size)
			}
		})
	}
}

func TestCollectNotADirectory(t *testing.T) {
	dir := setup(t, tree{"exp": "file"})
	if _, err := Collect(dir, nil, nil); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("error = %v", err)
	}
	if _, err := Collect(filepath.Join(dir, "nope"), nil, nil); err == nil || !strings.Contains(err.Error(), "open experiment directory") {
		t.Fatalf("error = %v", err)
	}
}

func TestHashDeterministic(t *testing.T) {
	tr := tree{
		"exp/xrun.yaml": "name: x\n", "exp/a.py": "a", "exp/b/c.py": "c", "exp/run*": "r",
		"exp/l": "->a.py", "kernels/k/k.py": "k",
	}
	spec := &spec.Spec{Include: []string{"../kernels/k"}}
	hash := func(t *testing.T, edit func(dir string)) string {
		t.Helper()
		dir := setup(t, tr)
		if edit != nil {
			edit(dir)
		}
		c, err := Collect(dir, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Hash
	}
	ref := hash(t, nil)
	same := map[string]func(dir string){
		"other mtimes": func(dir string) {
			old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
			filepath.Walk(filepath.Dir(dir), func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, old, old) })
		},
		"other permissions, same exec bit": func(dir string) {
			os.Chmod(filepath.Join(dir, "a.py"), 0o600)
			os.Chmod(filepath.Join(dir, "run"), 0o700)
		},
		"ignored file added": func(dir string) { os.WriteFile(filepath.Join(dir, "b", "x.pyc"), []byte("x"), 0o644) },
	}
	for name, edit := range same {
		if got := hash(t, edit); got != ref {
			t.Errorf("%s: hash changed", name)
		}
	}
	differ := map[string]func(dir string){
		"content":       func(dir string) { os.WriteFile(filepath.Join(dir, "a.py"), []byte("A"), 0o644) },
		"exec bit":      func(dir string) { os.Chmod(filepath.Join(dir, "a.py"), 0o755) },
		"rename":        func(dir string) { os.Rename(filepath.Join(dir, "b"), filepath.Join(dir, "d")) },
		"empty dir":     func(dir string) { os.Mkdir(filepath.Join(dir, "e"), 0o755) },
		"link target":   func(dir string) { os.Remove(filepath.Join(dir, "l")); os.Symlink("b/c.py", filepath.Join(dir, "l")) },
		"include edit":  func(dir string) { os.WriteFile(filepath.Join(dir, "..", "kernels", "k", "k.py"), []byte("K"), 0o644) },
		"file appended": func(dir string) { os.WriteFile(filepath.Join(dir, "z"), nil, 0o644) },
	}
	for name, edit := range differ {
		if got := hash(t, edit); got == ref {
			t.Errorf("%s: hash did not change", name)
		}
	}
}

func TestProgress(t *testing.T) {
	tr := tree{"exp/xrun.yaml": "name: x\n"}
	for i := range 50 {
		tr["exp/f"+string(rune('a'+i%26))+string(rune('a'+i/26))] = strings.Repeat("x", i)
	}
	dir := setup(t, tr)
	var calls [][2]int64
	c, err := Collect(dir, nil, &Reporter{Progress: func(files int, bytes int64) { calls = append(calls, [2]int64{int64(files), bytes}) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) == 0 || len(calls) > 2 {
		t.Fatalf("progress called %d times: %v", len(calls), calls)
	}
	if last := calls[len(calls)-1]; last != [2]int64{51, c.Bytes} {
		t.Errorf("last progress = %v, want [51 %d]", last, c.Bytes)
	}
}

type tarEntry struct {
	hdr  *tar.Header
	data string
}

func readTar(t *testing.T, b []byte) []tarEntry {
	t.Helper()
	var out []tarEntry
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{h, string(data)})
	}
}

func TestWriteTar(t *testing.T) {
	tr := tree{
		"exp/xrun.yaml": "name: x\n", "exp/a.py": "a", "exp/deep/er/c.py": "c", "exp/run*": "r",
		"exp/l": "->a.py", "exp/.xrunignore": "deep/er\n!deep/er/c.py\n",
	}
	runner := filepath.Join(t.TempDir(), "runner")
	if err := os.WriteFile(runner, []byte("\x7fELF"), 0o700); err != nil {
		t.Fatal(err)
	}
	extras := []Extra{{Name: "xrun-runner", Mode: 0o755, Src: runner}, {Name: "Dockerfile", Data: []byte("FROM scratch\n")}}
	write := func(t *testing.T) ([]byte, *Context) {
		dir := setup(t, tr)
		c, err := Collect(dir, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := c.WriteTar(&buf, extras...); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), c
	}
	b1, c1 := write(t)
	b2, c2 := write(t)
	if !bytes.Equal(b1, b2) {
		t.Error("two copies of the same tree give different tars")
	}
	h1, err := c1.HashWith(extras...)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := c2.HashWith(extras[1], extras[0])
	h3, _ := c2.HashWith(Extra{Name: "Dockerfile", Data: []byte("FROM busybox\n")}, extras[0])
	if h1 != h2 || h1 == h3 || h1 == c1.Hash {
		t.Errorf("HashWith: %s %s %s (context %s)", h1, h2, h3, c1.Hash)
	}

	want := []string{
		"Dockerfile 644 FROM scratch\n", "exp/ 755 ", "exp/a.py 644 a", "exp/deep/ 755 ", "exp/deep/er/ 755 ",
		"exp/deep/er/c.py 644 c", "exp/l 777 ->a.py", "exp/run 755 r", "exp/xrun.yaml 644 name: x\n", "xrun-runner 755 \x7fELF",
	}
	var got []string
	for _, e := range readTar(t, b1) {
		h := e.hdr
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(ModTime) {
			t.Errorf("%s: uid %d gid %d uname %q gname %q mtime %v", h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime)
		}
		s := h.Name + " " + strconvOctal(h.Mode) + " " + e.data
		if h.Typeflag == tar.TypeSymlink {
			s += "->" + h.Linkname
		}
		got = append(got, s)
	}
	if !slices.Equal(got, want) {
		t.Errorf("tar:\n got %q\nwant %q", got, want)
	}

	// A file edited after Collect is caught.
	os.WriteFile(c1.Files[0].Src, []byte("b"), 0o644)
	if err := c1.WriteTar(io.Discard); err == nil || !strings.Contains(err.Error(), "changed since the context was hashed") {
		t.Errorf("edited file: error = %v", err)
	}
	os.WriteFile(c1.Files[0].Src, []byte("longer"), 0o644)
	if err := c1.WriteTar(io.Discard); err == nil || !strings.Contains(err.Error(), "changed size") {
		t.Errorf("grown file: error = %v", err)
	}
}

func strconvOctal(m int64) string {
	const digits = "01234567"
	return string([]byte{digits[m>>6&7], digits[m>>3&7], digits[m&7]})
}

func TestWriteTarBadExtras(t *testing.T) {
	dir := setup(t, tree{"exp/xrun.yaml": "name: x\n"})
	c, err := Collect(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string][]Extra{
		"not a clean relative path":       {{Name: "../x", Data: []byte{}}},
		"would overwrite the experiment":  {{Name: "exp/x", Data: []byte{}}},
		"is given twice":                  {{Name: "a", Data: []byte{}}, {Name: "a", Data: []byte{}}},
		"has neither data nor a source":   {{Name: "a"}},
		"read extra file \"a\"":           {{Name: "a", Src: filepath.Join(dir, "nope")}},
		"is not a clean relative path; u": {{Name: "/abs", Data: []byte{}}},
	}
	for want, extras := range tests {
		if err := c.WriteTar(io.Discard, extras...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error = %v, want %q", extras, err, want)
		}
	}
}

// BenchmarkCollect collects and tars a context of 2,000 files of 16 KiB in
// 40 directories (go test -bench Collect ./client/buildctx).
func BenchmarkCollect(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "exp")
	data := bytes.Repeat([]byte("0123456789abcdef"), 1024)
	for i := range 2000 {
		p := filepath.Join(dir, "d"+strconv.Itoa(i%40), "f"+strconv.Itoa(i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "xrun.yaml"), []byte("name: x\n"), 0o644)
	b.ResetTimer()
	for b.Loop() {
		c, err := Collect(dir, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.WriteTar(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

func TestIncludeBoundary(t *testing.T) {
	ws := t.TempDir()
	tree{
		"repo/.git/HEAD":               "ref: refs/heads/main\n",
		"repo/experiments/e/xrun.yaml": "name: e\n",
		"repo/kernels/gla/k.py":        "k",
		"repo/kernels/out":             "->../../outside",
		"outside/secret":               "s",
		"plain/exp/xrun.yaml":          "name: p\n",
		"plain/kernels/k.py":           "k",
		"wt/.git":                      "gitdir: /elsewhere\n",
		"wt/experiments/e/xrun.yaml":   "name: w\n",
		"wt/kernels/k.py":              "k",
	}.make(t, ws)
	gitExp := filepath.Join(ws, "repo", "experiments", "e")
	tests := []struct {
		name    string
		exp     string
		include string
		want    string // a file the context must have
		wantErr string
	}{
		{"sibling tree in the repository", gitExp, "../../kernels/gla", "exp/gla/k.py", ""},
		{"relative escape from the repository", gitExp, "../../../outside",
			"", `include "../../../outside" resolves to ` + filepath.Join(ws, "outside") + ", outside the experiment's git repository " + filepath.Join(ws, "repo")},
		{"deep relative escape", gitExp, "../../../../../../../../../../../etc",
			"", `include "../../../../../../../../../../../etc" resolves to /etc, outside the experiment's git repository`},
		{"symlink in the repository leading out", gitExp, "../../kernels/out",
			"", "resolves to " + filepath.Join(ws, "outside") + ", outside the experiment's git repository"},
		{"absolute path outside", gitExp, filepath.Join(ws, "outside"), "", "outside the experiment's git repository"},
		{"sibling without git", filepath.Join(ws, "plain", "exp"), "../kernels", "exp/kernels/k.py", ""},
		{"escape without git", filepath.Join(ws, "plain", "exp"), "../../outside",
			"", "outside " + filepath.Join(ws, "plain") + ", the experiment directory's parent (the experiment is in no git repository"},
		{"worktree (.git is a file)", filepath.Join(ws, "wt", "experiments", "e"), "../../kernels", "exp/kernels/k.py", ""},
		{"escape from a worktree", filepath.Join(ws, "wt", "experiments", "e"), "../../../outside", "", "outside the experiment's git repository " + filepath.Join(ws, "wt")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Collect(tc.exp, &spec.Spec{Include: []string{tc.include}}, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := dsts(c); !slices.Contains(got, tc.want) {
				t.Errorf("files %q lack %s", got, tc.want)
			}
		})
	}
}

func TestLargeFileWarning(t *testing.T) {
	// sparse makes a file of size bytes without writing them.
	sparse := func(t *testing.T, p string, size int64) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		tree    tree
		big     string // made LargeFileBytes + extra bytes long
		extra   int64
		include []string
		want    string // "" for no warning; %s is the workspace
	}{
		{name: "large file in the experiment", big: "exp/data/big.bin",
			want: `%s/exp/data/big.bin is 100MiB and goes into the image; if the experiment does not need it, add the line "data/big.bin" to %s/exp/.xrunignore`},
		{name: "just under the threshold", big: "exp/data/big.bin", extra: -1},
		{name: "ignored by .xrunignore", tree: tree{"exp/.xrunignore": "data\n"}, big: "exp/data/big.bin"},
		{name: "the .dockerignore in use is named", tree: tree{"exp/.dockerignore": "*.tmp\n"}, big: "exp/big.bin",
			want: `%s/exp/big.bin is 100MiB and goes into the image; if the experiment does not need it, add the line "big.bin" to %s/exp/.dockerignore`},
		{name: "large file in an include", big: "kernels/k/weights.pt", include: []string{"../kernels/k"},
			want: `%s/kernels/k/weights.pt is 100MiB and goes into the image; if the experiment does not need it, add the line "k/weights.pt" to %s/exp/.xrunignore`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := tree{"exp/xrun.yaml": "name: x\n", "exp/small.py": "s", "kernels/k/k.py": "k"}
			for k, v := range tc.tree {
				tr[k] = v
			}
			dir := setup(t, tr)
			ws := filepath.Dir(dir)
			sparse(t, filepath.Join(ws, tc.big), LargeFileBytes+tc.extra)
			var warnings []string
			_, err := Collect(dir, &spec.Spec{Include: tc.include}, &Reporter{Warn: func(msg string) { warnings = append(warnings, msg) }})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if tc.want != "" {
				want = []string{strings.ReplaceAll(tc.want, "%s", ws)}
			}
			if !slices.Equal(warnings, want) {
				t.Errorf("warnings:\n got %q\nwant %q", warnings, want)
			}
		})
	}
}
