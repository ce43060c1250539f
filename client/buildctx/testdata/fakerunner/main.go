// Command fakerunner stands in for xrun-runner in the Dockerfile tests: it
// prints its arguments, its working directory, an environment variable,
// whether /xrun/out exists, and the files under /xrun/exp.
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	wd, _ := os.Getwd()
	fmt.Printf("args=%s\n", strings.Join(os.Args[1:], " "))
	fmt.Printf("wd=%s\n", wd)
	fmt.Printf("PYTHONUNBUFFERED=%s\n", os.Getenv("PYTHONUNBUFFERED"))
	if st, err := os.Stat("/xrun/out"); err == nil && st.IsDir() {
		fmt.Println("out=dir")
	}
	filepath.WalkDir("/xrun/exp", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := d.Info()
		line := fmt.Sprintf("file=%s %v", p, info.Mode())
		if d.Type()&fs.ModeSymlink != 0 {
			t, _ := os.Readlink(p)
			line += " -> " + t
		} else if info.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			line += " " + strings.TrimSpace(string(b))
		}
		fmt.Println(line)
		return nil
	})
}
