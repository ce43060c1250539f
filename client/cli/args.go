package cli

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsFirst moves the flags that follow a command's arguments in front of
// them, so that "xrun results 3fa1 --markdown" means what
// "xrun results --markdown 3fa1" does (the flag parser stops at the first
// argument). A flag that takes a value keeps the word after it; "--" ends
// the flags, and what follows it stays an argument as given. Arguments
// before the command name, and anything after an unknown command, are
// left alone.
func flagsFirst(app *cli.App, args []string) []string {
	// A completion request keeps its words as typed: urfave/cli looks for
	// its flag last, and for the word being completed before it.
	if n := len(args); n > 0 && args[n-1] == "--generate-bash-completion" {
		return args
	}
	at := -1
	var cmd *cli.Command
	for i := 1; i < len(args); i++ {
		if strings.HasPrefix(args[i], "-") {
			continue // a global flag (--help, --version): none takes a value
		}
		cmd = app.Command(args[i])
		at = i
		break
	}
	// A command with subcommands (history import): the subcommand named
	// next takes the flags; without one, the command itself.
	for cmd != nil && len(cmd.Subcommands) > 0 && at+1 < len(args) {
		sub := subcommand(cmd, args[at+1])
		if sub == nil {
			break
		}
		cmd, at = sub, at+1
	}
	if cmd == nil {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	var flags, rest []string
	for i := at + 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i:]...)
			i = len(args)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !hasValue && takesValue[name] && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		default:
			rest = append(rest, a)
		}
	}
	out := slices.Clone(args[:at+1])
	out = append(out, flags...)
	return append(out, rest...)
}

// subcommand is cmd's subcommand called name, or nil.
func subcommand(cmd *cli.Command, name string) *cli.Command {
	for _, c := range cmd.Subcommands {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}
