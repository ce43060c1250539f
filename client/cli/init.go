package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/spec"
)

type initOptions struct {
	dir  string
	name string
	base string
}

func newInitCommand(a *App) *cli.Command {
	var o initOptions
	return &cli.Command{
		Name:      "init",
		Usage:     "make a new experiment directory: xrun.yaml with comments, a reference and one implementation",
		ArgsUsage: "DIR",
		Description: `The experiment runs as it is: xrun submit --cpu DIR on any Docker host with the
CPU base image, xrun submit DIR on a GPU host.

Examples:
  xrun init my-kernel && xrun submit --cpu my-kernel
  xrun init --name gla-fused experiments/040-gla-fused`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "experiment name (default: the directory's name)", Destination: &o.name},
			&cli.StringFlag{Name: "base", Usage: "image.base to write (default: none, so xrun picks its GPU or CPU base)", Destination: &o.base},
		},
		BashComplete: completeDirs,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("init takes one directory, got %d arguments", c.NArg())
			}
			o.dir = c.Args().First()
			return runInit(c.Context, a, o)
		},
	}
}

var notName = regexp.MustCompile(`[^a-z0-9._-]+`)

func runInit(_ context.Context, a *App, o initOptions) error {
	name := o.name
	if name == "" {
		abs, err := filepath.Abs(o.dir)
		if err != nil {
			return fmt.Errorf("init %s: %w", o.dir, err)
		}
		name = strings.Trim(notName.ReplaceAllString(strings.ToLower(filepath.Base(abs)), "-"), "-._")
		if name == "" {
			name = "experiment"
		}
	}
	if _, err := os.Stat(filepath.Join(o.dir, spec.FileName)); err == nil {
		return usageError("%s already has an %s: pick a new directory", o.dir, spec.FileName)
	}
	fs, err := spec.Scaffold(name, o.base)
	if err != nil {
		return err
	}
	if _, err := spec.Parse(filepath.Join(o.dir, spec.FileName), fs[0].Data); err != nil {
		return usageError("%v (pick another --name)", err)
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return fmt.Errorf("init %s: %w", o.dir, err)
	}
	for _, f := range fs {
		p := filepath.Join(o.dir, f.Name)
		fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			return usageError("%s exists: init does not overwrite files; pick a new directory", p)
		}
		if err != nil {
			return fmt.Errorf("init %s: %w", o.dir, err)
		}
		_, err = fh.Write(f.Data)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("init %s: %w", o.dir, err)
		}
	}
	fmt.Fprintf(a.Err, "made experiment %q in %s: run it with `xrun submit --cpu %s`\n", name, o.dir, text.ShellQuote(o.dir))
	return nil
}
