package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

type completionOptions struct {
	shell string
}

func newCompletionCommand(a *App) *cli.Command {
	var o completionOptions
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: `Completes commands, flags and job ids (from the job store). The bash and zsh
scripts ask xrun itself, so they follow new commands without being remade.

Examples:
  source <(xrun completion bash)                            # this shell; add it to ~/.bashrc
  xrun completion bash > /etc/bash_completion.d/xrun
  xrun completion zsh > "${fpath[1]}/_xrun"                 # then: compinit
  xrun completion fish > ~/.config/fish/completions/xrun.fish`,
		BashComplete: func(c *cli.Context) {
			for _, s := range []string{"bash", "zsh", "fish"} {
				fmt.Fprintln(c.App.Writer, s)
			}
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("completion takes one shell: bash, zsh or fish")
			}
			o.shell = c.Args().First()
			return runCompletion(c.Context, a, o)
		},
	}
}

func runCompletion(_ context.Context, a *App, o completionOptions) error {
	switch o.shell {
	case "bash":
		_, err := io.WriteString(a.Out, bashCompletion)
		return err
	case "zsh":
		_, err := io.WriteString(a.Out, zshCompletion)
		return err
	case "fish":
		// fish wants the whole tree up front; urfave/cli writes it from
		// the commands and flags.
		s, err := a.Command().ToFishCompletion()
		if err != nil {
			return fmt.Errorf("make the fish completion: %w", err)
		}
		_, err = io.WriteString(a.Out, s)
		return err
	}
	return usageError("completion: unknown shell %q: use bash, zsh or fish", o.shell)
}

// The bash and zsh scripts call `xrun ... --generate-bash-completion`
// (urfave/cli's hook) with the words typed so far. Unlike urfave/cli's
// sample scripts they need no bash-completion package, and quote the
// words instead of eval-ing them.
const bashCompletion = `# bash completion for xrun: source <(xrun completion bash)
_xrun_complete() {
	local cur="${COMP_WORDS[COMP_CWORD]}" opts
	local -a words=("${COMP_WORDS[@]:0:COMP_CWORD}")
	if [[ "$cur" == -* ]]; then
		opts="$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)"
	else
		opts="$("${words[@]}" --generate-bash-completion 2>/dev/null)"
	fi
	local IFS=$'\n'
	COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o default -F _xrun_complete xrun
`

// zsh: urfave/cli adds each command's usage ("name:usage") when $0 ends in
// zsh, which _describe shows beside the name.
const zshCompletion = `#compdef xrun
# zsh completion for xrun: xrun completion zsh > "${fpath[1]}/_xrun"
_xrun() {
	local -a opts
	local cur=${words[CURRENT]}
	if [[ "$cur" == -* ]]; then
		opts=("${(@f)$(env 0=zsh "${(@)words[1,CURRENT-1]}" "$cur" --generate-bash-completion 2>/dev/null)}")
	else
		opts=("${(@f)$(env 0=zsh "${(@)words[1,CURRENT-1]}" --generate-bash-completion 2>/dev/null)}")
	fi
	if [[ -n "${opts[1]}" ]]; then
		_describe 'xrun' opts
	else
		_files
	fi
}
if [[ "$funcstack[1]" == "_xrun" ]]; then
	_xrun "$@"
else
	compdef _xrun xrun
fi
`

// completeJobs offers the ids in the job store to commands that take jobs,
// and their flags when a flag is being typed (urfave/cli's default, which
// reads os.Args as it does).
func completeJobs(a *App) cli.BashCompleteFunc {
	return func(c *cli.Context) {
		if n := len(os.Args); n > 2 && strings.HasPrefix(os.Args[n-2], "-") {
			cli.DefaultCompleteWithFlags(c.Command)(c)
			return
		}
		st, err := a.Store()
		if err != nil {
			return
		}
		list, err := st.List()
		if err != nil {
			return
		}
		for _, j := range list {
			fmt.Fprintln(c.App.Writer, j.ID)
		}
	}
}

// completeDirs is for commands that take a directory: their flags when a
// flag is being typed, else nothing, so that the shell completes paths
// (bash's -o default, zsh's _files) rather than urfave/cli's "help h".
func completeDirs(c *cli.Context) {
	if n := len(os.Args); n > 2 && strings.HasPrefix(os.Args[n-2], "-") {
		cli.DefaultCompleteWithFlags(c.Command)(c)
	}
}
