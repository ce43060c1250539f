package cli

import (
	"fmt"
	"runtime"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/internal/version"
)

type versionOptions struct {
	json bool
}

type versionInfo struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func newVersionCommand(a *App) *cli.Command {
	var o versionOptions
	return &cli.Command{
		Name:  "version",
		Usage: "print xrun's version (the runner in every image is the same version)",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print as JSON", Destination: &o.json},
		},
		Action: func(c *cli.Context) error {
			return runVersion(a, o)
		},
	}
}

func runVersion(a *App, o versionOptions) error {
	v := versionInfo{Version: version.Version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if o.json {
		return render.JSON(a.Out, v)
	}
	_, err := fmt.Fprintf(a.Out, "xrun %s (%s, %s/%s)\n", v.Version, v.Go, v.OS, v.Arch)
	return err
}
