// Package cli is the xrun command line: one file per command, each with an
// options struct, a constructor newXCommand(app) and runX(ctx, app, opts).
// App holds the output streams, the job store and a lazily made engine per
// host, so tests can replace any of them.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/table"
	"github.com/xrun-dev/xrun/internal/text"
)

// App is the state shared by the commands of one xrun invocation: where
// output goes, the environment, and the job store, backends and job
// manager, each made on first use so that a test can swap any of them.
type App struct {
	Out, Err io.Writer
	// OutTTY and ErrTTY are the raw stdout and stderr where they are
	// terminals (nil elsewhere): a status line is drawn on them
	// (render), the rest goes through Out and Err.
	OutTTY, ErrTTY io.Writer
	// OutTerminal is whether Out is a terminal: a person reading, rather
	// than a script, which gets the bare table.
	OutTerminal bool
	// StdoutClosed, when set, returns a channel closed when stdout loses
	// its reader; an attached submit then leaves its job running detached.
	StdoutClosed func() <-chan struct{}
	// Getenv reads the environment; tests replace it.
	Getenv func(string) string
	// Connect makes the engine for a host selection; tests replace it.
	Connect connect.Connector
	// RunnerFor returns the runner binary for the daemon's platform
	// (nil: build.RunnerBinary, which job.Manager uses); tests replace it.
	RunnerFor func(ctx context.Context, goos, goarch string, logf func(string, ...any)) (string, error)
	// StoreRoot overrides the job store location (default: store.DefaultRoot).
	StoreRoot string
	// HistoryPath overrides where the results history is (historyPath).
	HistoryPath string

	// Trace, when set (XRUN_TRACE=1), times the steps of a submit on stderr.
	Trace bool
	// In is standard input, for xrun exec -i (nil: the process's).
	In io.Reader

	mu       sync.Mutex
	backends *connect.Set
	store    *store.Store
	hist     *nightly.History
}

// NewApp returns an App writing to out and errw, reading the process
// environment and talking to real daemons. What goes to errw, and to out
// where it is a terminal, loses its control sequences (render.Safe): much of
// it (logs, error strings from results) is the experiment's own output,
// and a CI log renders escapes as a terminal does. Out keeps them where it
// is a file or a pipe, for results --json's bytes as the runner wrote them
// (JSON escapes every control character); the commands that print the
// experiment's text there drop them themselves: the tables, xrun logs,
// the CSVs, and the history's and regress's reports.
func NewApp(out, errw io.Writer, getenv func(string) string) *App {
	w, tty := render.Safe(out)
	return &App{Out: w, OutTerminal: tty, OutTTY: render.Terminal(out), ErrTTY: render.Terminal(errw),
		StdoutClosed: func() <-chan struct{} { return stdoutClosed(out) }, Err: render.SafeAlways(errw), Getenv: getenv,
		Trace: getenv("XRUN_TRACE") != ""}
}

// Backends returns the set of engines and clusters this invocation
// talks to.
func (a *App) Backends() *connect.Set {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.backends == nil {
		a.backends = &connect.Set{Getenv: a.Getenv, Connect: a.Connect, KubeLog: a.Err}
		// Jobs run on this machine without a container keep their
		// directories beside the job store (client/backend/local).
		if root, err := a.storeRoot(); err == nil {
			a.backends.LocalRoot = filepath.Join(filepath.Dir(root), "local")
		}
	}
	return a.backends
}

// Jobs returns the job manager over the job store and the backends.
func (a *App) Jobs() (*job.Manager, error) {
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	// Every finished job's results join the history as they land, here
	// alone: a job finishes through its manager.
	return &job.Manager{Store: st, Backends: a.Backends(), Err: a.Err, ErrTTY: a.ErrTTY, RunnerFor: a.RunnerFor, Trace: a.Trace,
		Finished: a.recordHistory}, nil
}

// Store returns the job store, opening it on first use.
func (a *App) Store() (*store.Store, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.store != nil {
		return a.store, nil
	}
	root, err := a.storeRoot()
	if err != nil {
		return nil, err
	}
	s, err := store.Open(root)
	if err != nil {
		return nil, err
	}
	a.store = s
	return s, nil
}

// storeRoot is where the job store is: StoreRoot, else
// $XDG_DATA_HOME/xrun/jobs, else ~/.local/share/xrun/jobs.
func (a *App) storeRoot() (string, error) {
	if a.StoreRoot != "" {
		return a.StoreRoot, nil
	}
	if d := a.getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "xrun", "jobs"), nil
	}
	return store.DefaultRoot()
}

func (a *App) getenv(k string) string {
	if a.Getenv == nil {
		return os.Getenv(k)
	}
	return a.Getenv(k)
}

// Close releases every engine connection and the history.
func (a *App) Close() {
	a.Backends().Close()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hist != nil {
		a.hist.Close()
		a.hist = nil
	}
}

// WithAbort returns ctx carrying abort, closed on a second Ctrl-C
// (job.WithAbort).
func WithAbort(ctx context.Context, abort <-chan struct{}) context.Context {
	return job.WithAbort(ctx, abort)
}

// Command returns the xrun command tree.
func (a *App) Command() *cli.App {
	app := &cli.App{
		Name:  "xrun",
		Usage: "package GPU-kernel experiments into container images and run them on your own Docker hosts",
		// --version prints what xrun version prints: one format.
		HideVersion: true,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version (as xrun version)"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("version") {
				return runVersion(a, versionOptions{})
			}
			if c.NArg() > 0 {
				var names []string
				for _, cmd := range c.App.VisibleCommands() {
					names = append(names, cmd.Names()...)
				}
				if near := text.Closest(c.Args().First(), names); near != "" {
					return usageError("%q is not an xrun command: did you mean %q? (see xrun --help)", c.Args().First(), near)
				}
				return usageError("%q is not an xrun command (see xrun --help)", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		Description: `xrun builds an experiment directory (xrun.yaml + code) into an image on a Docker
host, runs it there with the in-container runner, and keeps the job's record, logs
and results under $XDG_DATA_HOME/xrun/jobs.

Examples:
  xrun init my-kernel && xrun submit --cpu my-kernel
  xrun submit -d experiments/039-gla-pingpong      # prints the job id
  xrun logs -f 3fa1 && xrun results --markdown 3fa1
  xrun submit --host ssh://me@gpu-box --gpus 0,1 experiments/039-gla-pingpong`,
		Writer:               a.Out,
		ErrWriter:            a.Err,
		HideHelpCommand:      true,
		EnableBashCompletion: true,
		Suggest:              true,
		// Errors are printed once, by Main, with the exit code they carry.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{
			newInitCommand(a),
			newSubmitCommand(a),
			newLogsCommand(a),
			newPsCommand(a),
			newStatusCommand(a),
			newWaitCommand(a),
			newCancelCommand(a),
			newExecCommand(a),
			newRmCommand(a),
			newResultsCommand(a),
			newCompareCommand(a),
			newHistoryCommand(a),
			newServeCommand(a),
			newRegressCommand(a),
			newReportCommand(a),
			newRunCommand(a),
			newRerunCommand(a),
			newVersionCommand(a),
			newCompletionCommand(a),
			newPruneCommand(a),
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageError("%s (see xrun --help)", flagError(err, c.App.Flags))
		},
	}
	var usage func(cs []*cli.Command, parent string)
	usage = func(cs []*cli.Command, parent string) {
		for _, c := range cs {
			name := strings.TrimSpace(parent + " " + c.Name)
			flags := c.Flags
			c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
				return usageError("%s (see xrun %s --help)", flagError(err, flags), name)
			}
			tidyDefaults(flags)
			usage(c.Subcommands, name)
		}
	}
	usage(app.Commands, "")
	tidyDefaults(app.Flags)
	return app
}

// tidyDefaults makes the help's defaults read as a person writes them: a
// boolean flag says no "(default: false)", and a duration's default is
// "1h", not "1h0m0s".
func tidyDefaults(flags []cli.Flag) {
	for _, f := range flags {
		switch f := f.(type) {
		case *cli.BoolFlag:
			f.DisableDefaultText = !f.Value
		case *cli.DurationFlag:
			if f.DefaultText == "" && f.Value != 0 {
				f.DefaultText = table.Duration(f.Value)
			}
		}
	}
}

// flagParseError matches the flag package's words for a value it cannot
// parse; flagUnknown its words for a flag no command defines.
var (
	flagParseError = regexp.MustCompile(`^invalid value "(.*)" for flag -([\w-]+): (.*)$`)
	flagUnknown    = regexp.MustCompile(`^flag provided but not defined: -([\w-]+)$`)
)

// flagError says a command-line parse error in the words of the command
// line: --timeout rather than the flag package's "flag -timeout", and
// what kind of value the flag (one of flags) takes.
func flagError(err error, flags []cli.Flag) string {
	msg := err.Error()
	dash := func(name string) string {
		if len(name) == 1 {
			return "-" + name
		}
		return "--" + name
	}
	if m := flagParseError.FindStringSubmatch(msg); m != nil {
		why := m[3]
		for _, f := range flags {
			if _, ok := f.(*cli.DurationFlag); ok && slices.Contains(f.Names(), m[2]) {
				why = "not a duration (30s, 10m, 1h30m)"
			}
		}
		return fmt.Sprintf("%s %q: %s", dash(m[2]), m[1], why)
	}
	if m := flagUnknown.FindStringSubmatch(msg); m != nil {
		return "unknown flag " + dash(m[1])
	}
	return msg
}

// Main runs xrun with args (os.Args) and returns the process exit code.
func Main(ctx context.Context, args []string, out, errw io.Writer, getenv func(string) string) int {
	a := NewApp(out, errw, getenv)
	defer a.Close()
	app := a.Command()
	err := app.RunContext(ctx, flagsFirst(app, args))
	return a.report(err)
}

// report prints err on stderr (once, prefixed "xrun: ") and returns the
// exit code it carries.
func (a *App) report(err error) int {
	if err == nil {
		return 0
	}
	var ee *contract.ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(a.Err, "xrun: %s\n", worded(ee.Err))
		}
		return ee.Code
	}
	var ce cli.ExitCoder
	if errors.As(err, &ce) {
		if err.Error() != "" {
			fmt.Fprintf(a.Err, "xrun: %v\n", err)
		}
		return ce.ExitCode()
	}
	fmt.Fprintf(a.Err, "xrun: %s\n", worded(err))
	return contract.ExitInfra
}

// hostFlags are --host and --context, for commands that pick a daemon.
func hostFlags(sel *connect.Selection) []cli.Flag {
	return append([]cli.Flag{
		&cli.StringSliceFlag{
			Name: "host", Aliases: []string{"H"}, EnvVars: []string{"XRUN_HOST"},
			Usage: "Docker daemon: unix:///path, tcp://host:2376 (TLS via DOCKER_TLS_VERIFY/DOCKER_CERT_PATH), ssh://user@host, or a host named in $XDG_CONFIG_HOME/xrun/config.yaml (default: DOCKER_HOST, then the docker context); repeat it to fan out (submit) or list across hosts (ps)",
			Action: func(_ *cli.Context, v []string) error {
				if len(v) > 0 {
					sel.Host = v[0]
				}
				return nil
			},
		},
		&cli.StringFlag{
			Name: "context", EnvVars: []string{"XRUN_CONTEXT"},
			Usage:       "docker context to use (default: DOCKER_CONTEXT, then the current context); with --k8s, a context of the kubeconfig",
			Destination: &sel.Context,
		},
	}, optionFlags(sel.HostOptions())...)
}

// optionFlags are the flags of options a backend declares
// (backend.Option).
func optionFlags(opts []backend.Option) []cli.Flag {
	flags := make([]cli.Flag, 0, len(opts))
	for _, o := range opts {
		if o.Switch != nil {
			flags = append(flags, &cli.BoolFlag{Name: o.Name, Aliases: o.Aliases, EnvVars: o.Env, Usage: o.Usage, Destination: o.Switch})
			continue
		}
		flags = append(flags, &cli.GenericFlag{Name: o.Name, Aliases: o.Aliases, EnvVars: o.Env, Usage: o.Usage, DefaultText: o.Default, Value: o.Value})
	}
	return flags
}

// usageError is a bad command line, exit code 3.
func usageError(format string, args ...any) error {
	return &contract.ExitError{Code: contract.ExitUsage, Err: fmt.Errorf(format, args...)}
}
