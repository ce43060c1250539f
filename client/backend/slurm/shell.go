package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
)

// Shell runs sh scripts where the cluster's commands are: on this
// machine, or on the login node over ssh.
type Shell interface {
	// Run runs script with stdin (nil: none) and returns its stdout. A
	// script that exits non-zero is an *ExitError carrying its stderr; one
	// that could not run at all (ssh could not connect) wraps
	// backend.ErrUnreachable.
	Run(ctx context.Context, script string, stdin io.Reader) ([]byte, error)
	// Stream runs script and returns its stdout as it comes; Close waits
	// for the script and returns its error.
	Stream(ctx context.Context, script string) (io.ReadCloser, error)
	// Where names the machine the scripts run on, for messages.
	Where() string
}

// ExitError is a script's failure: its exit code and what it said on
// stderr.
type ExitError struct {
	Code   int
	Stderr string
}

func (e *ExitError) Error() string {
	if e.Stderr == "" {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Stderr
}

// LocalShell runs scripts with this machine's sh (sbatch is here).
type LocalShell struct{}

func (LocalShell) command(ctx context.Context, script string) *exec.Cmd {
	return exec.CommandContext(ctx, "sh", "-c", script)
}

func (s LocalShell) Run(ctx context.Context, script string, stdin io.Reader) ([]byte, error) {
	return run(s.command(ctx, script), stdin, "")
}

func (s LocalShell) Stream(ctx context.Context, script string) (io.ReadCloser, error) {
	return stream(s.command(ctx, script), "")
}

func (LocalShell) Where() string { return "this machine" }

// SSHShell runs scripts on a login node with the ssh command, so that
// ~/.ssh/config, agents and jump hosts work as they do for the user.
type SSHShell struct {
	// Login is [user@]host[:port] or an ssh://[user@]host[:port] address.
	Login string
	// Options are extra ssh arguments ("-i", "key"), as a named host of
	// xrun's config gives them (ssh_options).
	Options []string
}

func (s SSHShell) command(ctx context.Context, script string) *exec.Cmd {
	host, port := s.Login, ""
	host = strings.TrimPrefix(host, "ssh://")
	if i := strings.LastIndex(host, ":"); i > 0 && !strings.Contains(host[i:], "]") {
		host, port = host[:i], host[i+1:]
	}
	args := append([]string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=15"}, s.Options...)
	// After the user's options, which win where they set the same ones
	// (ssh takes an option's first value).
	args = append(args, controlOptions()...)
	if port != "" {
		args = append(args, "-p", port)
	}
	// The login shell may not be sh: it is handed one quoted word.
	args = append(args, "--", host, "sh -c "+quote(script))
	return exec.CommandContext(ctx, "ssh", args...)
}

// ControlPersist is how long a shared ssh connection to a login node
// outlives its last session: a command that follows a job (wait, logs -f)
// runs a step every few seconds, and the next command of a user at the
// prompt comes soon after.
const ControlPersist = time.Minute

// controlOptions share one ssh connection per login node among a job's
// remote steps, and among the commands run in a row, through a control
// socket in a directory of this user's alone: a login node whose sessions
// take seconds to open (a jump host, a slow .bashrc) costs that once.
// None where there is no such directory.
func controlOptions() []string {
	d := controlDir()
	if d == "" {
		return nil
	}
	return []string{"-o", "ControlMaster=auto", "-o", "ControlPath=" + d + "/%C",
		"-o", fmt.Sprintf("ControlPersist=%d", int(ControlPersist.Seconds()))}
}

// controlDir is the directory of the control sockets: xrun-ssh-UID in
// XDG_RUNTIME_DIR, else in the temporary directory; "" when it is not
// this user's with mode 0700, for whoever may write a socket there could
// answer for the login node.
var controlDir = sync.OnceValue(func() string {
	return privateDir(fmt.Sprintf("xrun-ssh-%d", os.Getuid()), os.Getenv("XDG_RUNTIME_DIR"), os.TempDir(), "/tmp")
})

// privateDir is name in the first of bases where a socket's path fits,
// made if need be: "" when it is not this user's alone.
func privateDir(name string, bases ...string) string {
	for _, base := range bases {
		// A socket's path has room for about 100 bytes; %C is 40.
		d := filepath.Join(base, name)
		if base == "" || !filepath.IsAbs(base) || len(d)+41 > 100 {
			continue
		}
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			continue
		}
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || !ownedByMe(fi) {
			return ""
		}
		return d
	}
	return ""
}

func (s SSHShell) Run(ctx context.Context, script string, stdin io.Reader) ([]byte, error) {
	return run(s.command(ctx, script), stdin, s.Where())
}

func (s SSHShell) Stream(ctx context.Context, script string) (io.ReadCloser, error) {
	return stream(s.command(ctx, script), s.Where())
}

func (s SSHShell) Where() string { return strings.TrimPrefix(s.Login, "ssh://") }

// sshFailed is ssh's own exit code: it could not connect or log in.
const sshFailed = 255

// run runs cmd; login names the login node when cmd is ssh ("": a
// command of this machine).
func run(cmd *exec.Cmd, stdin io.Reader, login string) ([]byte, error) {
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errb
	err := cmd.Run()
	return out.Bytes(), exitError(err, errb.String(), login)
}

func exitError(err error, stderr string, login string) error {
	if err == nil {
		return nil
	}
	stderr = strings.TrimSpace(stderr)
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return fmt.Errorf("%w: %v", backend.ErrUnreachable, err)
	}
	if login != "" && ee.ExitCode() == sshFailed {
		return sshError(login, stderr)
	}
	if ee.ExitCode() == -1 {
		// Killed by a signal (the deadline of a look, Ctrl-C): the script
		// did not exit, and what it would have answered is not known. Not
		// an ExitError, which callers read as the script's answer ("no
		// output" for a test -d that was cut off).
		where := "the command"
		if login != "" {
			where = "ssh to " + login
		}
		return fmt.Errorf("%s was stopped before it finished (%v): %w", where, ee, backend.ErrUnreachable)
	}
	return &ExitError{Code: ee.ExitCode(), Stderr: stderr}
}

// sshError is ssh's own failure (it could not connect or log in) in one
// sentence with the next step: ssh says "ssh: connect to host ...", which
// is not prefixed again.
func sshError(login, stderr string) error {
	msg := strings.TrimPrefix(stderr, "ssh: ")
	if msg == "" {
		msg = "it exited with code 255"
	}
	try := "ssh " + login
	if i := strings.LastIndex(login, ":"); i > 0 && strings.Trim(login[i+1:], "0123456789") == "" {
		try = "ssh -p " + login[i+1:] + " " + login[:i]
	}
	next := fmt.Sprintf("check that `%s true` works from this shell (an agent, a key in ssh_options, a reachable host)", try)
	switch {
	case strings.Contains(stderr, "Host key verification failed"), strings.Contains(stderr, "REMOTE HOST IDENTIFICATION HAS CHANGED"):
		next = fmt.Sprintf("ssh to %s once by hand to check and accept its host key", login)
	case strings.Contains(stderr, "Permission denied"):
		next = "give ssh a key the login node takes: an agent, or -i KEY in the host's ssh_options (docs/hosts.md)"
	}
	return fmt.Errorf("ssh to %s failed: %s; %s: %w", login, oneLine(msg), next, backend.ErrUnreachable)
}

// oneLine is s's lines joined, for an error of one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

type streamed struct {
	io.ReadCloser
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	login  string // "": a command of this machine
}

func (s *streamed) Close() error {
	s.ReadCloser.Close()
	return exitError(s.cmd.Wait(), s.stderr.String(), s.login)
}

func stream(cmd *exec.Cmd, login string) (io.ReadCloser, error) {
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %v", backend.ErrUnreachable, err)
	}
	return &streamed{ReadCloser: out, cmd: cmd, stderr: &errb, login: login}, nil
}

// quote makes s one sh word.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
