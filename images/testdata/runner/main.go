// Command runner stands in for xrun-runner in the base image tests: it
// imports numpy (from the base) and yaml (from the image's apt packages)
// with python3 and prints their versions.
package main

import (
	"fmt"
	"os"
	"os/exec"
)

func main() {
	cmd := exec.Command("python3", "-c", "import numpy, yaml; print('numpy', numpy.__version__, 'yaml', yaml.__version__)")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		os.Exit(1)
	}
}
