package spec

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// torch.compile is found in the experiment's modules and in its includes,
// whether an include is beside the experiment (the host) or copied into it
// (the container); a hidden directory, a non-Python file or an experiment
// without it says no.
func TestUsesTorchCompile(t *testing.T) {
	root := t.TempDir()
	exp := filepath.Join(root, "exp")
	writeFile(t, filepath.Join(exp, "xrun.yaml"), "name: x # torch.compile in a comment of the spec\n")
	writeFile(t, filepath.Join(exp, "impl.py"), "import torch\n\ndef f(x):\n    return x * 2\n")
	writeFile(t, filepath.Join(exp, ".venv", "lib.py"), "torch.compile(f)\n")
	writeFile(t, filepath.Join(root, "kernels", "chain", "eager.py"), "import torch\n")
	if UsesTorchCompile(exp, []string{"../kernels/chain"}) {
		t.Error("found torch.compile in an experiment without it")
	}
	writeFile(t, filepath.Join(root, "kernels", "chain", "compiled.py"), "import torch\nf = torch.compile(g, dynamic=False)\n")
	if !UsesTorchCompile(exp, []string{"../kernels/chain"}) {
		t.Error("missed torch.compile in an include beside the experiment")
	}
	// The container: the include copied into the experiment by its base name.
	box := filepath.Join(t.TempDir(), "exp")
	writeFile(t, filepath.Join(box, "chain", "compiled.py"), "from torch._inductor import config\n")
	if !UsesTorchCompile(box, []string{"../kernels/chain"}) {
		t.Error("missed torch._inductor in an include copied into the experiment")
	}
	if UsesTorchCompile(filepath.Join(root, "missing"), nil) {
		t.Error("a missing directory uses torch.compile")
	}
}
