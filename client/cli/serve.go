package cli

import (
	"encoding/json"
	"fmt"
	"log"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/server"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/table"
)

// DefaultServeAddr is where xrun serve listens unless told: this machine
// only, as a team's server belongs behind a reverse proxy with TLS.
const DefaultServeAddr = "127.0.0.1:8420"

// EnvServeDB names the variable that gives xrun serve its database.
const EnvServeDB = "XRUN_DB"

// EnvServeDBPasswordFile names a file that holds the password of the
// PostgreSQL database, for a URL without one: a container's secret
// (images/server/compose.yaml), which stays out of the environment and
// the command line.
const EnvServeDBPasswordFile = "XRUN_DB_PASSWORD_FILE"

type serveOptions struct {
	addr            string
	db              string
	maxBody         int64
	tlsCert, tlsKey string
}

func newServeCommand(a *App) *cli.Command {
	var o serveOptions
	dbFlag := &cli.StringFlag{Name: "db", EnvVars: []string{EnvServeDB}, Destination: &o.db,
		Usage: "the history to serve: a postgres://... `URL`, or an SQLite file on a local disk (default: $XDG_DATA_HOME/xrun/history.db)"}
	return &cli.Command{
		Name:  "serve",
		Usage: "serve a results history over HTTP: runners post their results to it, and the history's readers read it",
		Description: `xrun serve keeps one results history for a team: runners on every host and
cluster post their results.json to it (XRUN_POST_URL=http://HOST:PORT/api/v1/results
with XRUN_POST_TOKEN), the readers get its series and verdicts as JSON (xrun
history, regress, compare and results with --server), and browsers get its
dashboard at /: the pages of xrun report --html, built from the history as
posts land, behind a sign-in with a read token.
Alone it serves the SQLite history of this user at once; --db postgres://...
(or XRUN_DB) runs the same history on PostgreSQL, creating and upgrading its
tables there.

Each request carries a token (Authorization: Bearer ...) of a scope: post may
only post results, read may only read, admin may do both. Tokens are kept
hashed; xrun serve token add prints a new one once. A post is checked as
xrun history import checks a file, capped at --max-body, and stored by job id:
a retry or a duplicate replaces the job's run, never adds a second.

Endpoints: POST /api/v1/results, POST /api/v1/results/missing (which of the
jobs named the server lacks, for xrun history push), GET /api/v1/history (?experiment= &impl=
&case=K=V &host= &gpu= &since=), GET /api/v1/runs (?experiment=),
GET /api/v1/runs/JOB, GET /api/v1/runs/JOB/results (the results.json the job
posted), GET /api/v1/regress (?job= &window= ...: regress's report),
GET /healthz; the dashboard at / (POST /login signs a browser in).
docs/server.md has the details.

Examples:
  xrun serve token add --scope post runners
  xrun serve --addr 127.0.0.1:8420
  XRUN_DB=postgres://xrun@db.lab/xrun xrun serve --addr 0.0.0.0:8420 --tls-cert cert.pem --tls-key key.pem`,
		Flags: []cli.Flag{
			dbFlag,
			&cli.StringFlag{Name: "addr", Value: DefaultServeAddr, Usage: "listen on `HOST:PORT`", Destination: &o.addr},
			&cli.Int64Flag{Name: "max-body", Value: server.DefaultMaxBody, Usage: "refuse a posted results.json larger than `BYTES`", Destination: &o.maxBody},
			&cli.StringFlag{Name: "tls-cert", Usage: "serve HTTPS with the certificate (and its chain) in this PEM `FILE` (with --tls-key)", Destination: &o.tlsCert},
			&cli.StringFlag{Name: "tls-key", Usage: "the certificate's private key, a PEM `FILE`", Destination: &o.tlsKey},
		},
		Subcommands: []*cli.Command{newServeTokenCommand(a, dbFlag, &o)},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError("serve takes no arguments, got %d (the database is --db)", c.NArg())
			}
			if (o.tlsCert == "") != (o.tlsKey == "") {
				return usageError("give both --tls-cert and --tls-key, or neither")
			}
			h, err := openServed(a, o.db)
			if err != nil {
				return err
			}
			defer h.Close()
			logger := log.New(a.Err, "xrun serve: ", log.LstdFlags)
			s := server.New(h, server.Options{MaxBody: o.maxBody, Log: logger, TLSCert: o.tlsCert, TLSKey: o.tlsKey})
			scheme := "http"
			if o.tlsCert != "" {
				scheme = "https"
			}
			err = server.Run(c.Context, s, o.addr, 30*time.Second, func(addr string) {
				logger.Printf("serving results history %s on %s://%s (post to %s://%s%s; the dashboard is %s://%s/)", h.Path(), scheme, addr, scheme, addr, server.ResultsPath, scheme, addr)
			})
			if err != nil {
				return &contract.ExitError{Code: contract.ExitInfra, Err: err}
			}
			return nil
		},
	}
}

// openServed opens the history that serve and its token commands work
// on: db when given, else this user's.
func openServed(a *App, db string) (*history.Store, error) {
	if db == "" {
		var err error
		if db, err = history.DefaultPath(a.getenv); err != nil {
			return nil, &contract.ExitError{Code: contract.ExitInfra, Err: err}
		}
	}
	if file := a.getenv(EnvServeDBPasswordFile); file != "" {
		var err error
		if db, err = withPasswordFile(db, file); err != nil {
			return nil, &contract.ExitError{Code: contract.ExitInfra, Err: err}
		}
	}
	h, err := history.Open(db)
	if err != nil {
		return nil, &contract.ExitError{Code: contract.ExitInfra, Err: err}
	}
	return h, nil
}

// withPasswordFile puts the password in file (its first line) into the
// PostgreSQL URL db.
func withPasswordFile(db, file string) (string, error) {
	if !history.IsURL(db) {
		return "", fmt.Errorf("%s is set but the history is the SQLite file %s: it gives a PostgreSQL password; unset it or give --db postgres://...", EnvServeDBPasswordFile, db)
	}
	u, err := url.Parse(db)
	if err != nil || u.User == nil || u.User.Username() == "" {
		return "", fmt.Errorf("%s needs a user in the database URL (postgres://USER@HOST/DB) to give the password to", EnvServeDBPasswordFile)
	}
	if _, ok := u.User.Password(); ok {
		return "", fmt.Errorf("the database URL has a password and %s gives another: keep one of them", EnvServeDBPasswordFile)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read the database password (%s): %w", EnvServeDBPasswordFile, err)
	}
	pw, _, _ := strings.Cut(string(data), "\n")
	if pw = strings.TrimRight(pw, "\r"); pw == "" {
		return "", fmt.Errorf("the database password file %s is empty", file)
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	return u.String(), nil
}

func newServeTokenCommand(a *App, dbFlag cli.Flag, o *serveOptions) *cli.Command {
	var scope string
	var asJSON bool
	jsonFlag := &cli.BoolFlag{Name: "json", Usage: "print JSON", Destination: &asJSON}
	return &cli.Command{
		Name:  "token",
		Usage: "add, list and remove the tokens that xrun serve accepts",
		Description: `A token's scope says what it may do: post (post results: the token runners
carry into jobs), read (read the history), admin (both). The server keeps only
a token's SHA-256; add prints the token once, so keep it where it is needed
(XRUN_POST_TOKEN of the runners, a CI secret).

Examples:
  xrun serve token add --scope post runners
  xrun serve token add --scope read dashboard --json
  xrun serve token ls
  xrun serve token rm runners`,
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "make a token and print it, once",
				ArgsUsage: "NAME",
				Flags: []cli.Flag{dbFlag, jsonFlag,
					&cli.StringFlag{Name: "scope", Required: true, Usage: "what the token may do: post, read or admin", Destination: &scope}},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageError("serve token add takes one token name, got %d arguments", c.NArg())
					}
					h, err := openServed(a, o.db)
					if err != nil {
						return err
					}
					defer h.Close()
					secret, err := server.NewToken(h, c.Args().First(), scope)
					if err != nil {
						return usageError("%v", err)
					}
					if asJSON {
						return printJSON(a, map[string]string{"name": c.Args().First(), "scope": scope, "token": secret})
					}
					fmt.Fprintln(a.Out, secret)
					fmt.Fprintf(a.Err, "token %s (scope %s) added: it is shown only now, so keep it\n", c.Args().First(), scope)
					return nil
				},
			},
			{
				Name:  "ls",
				Usage: "list the tokens (names and scopes; the tokens themselves are not kept)",
				Flags: []cli.Flag{dbFlag, jsonFlag},
				Action: func(c *cli.Context) error {
					h, err := openServed(a, o.db)
					if err != nil {
						return err
					}
					defer h.Close()
					ts, err := h.Tokens()
					if err != nil {
						return &contract.ExitError{Code: contract.ExitInfra, Err: err}
					}
					if asJSON {
						return printJSON(a, ts)
					}
					tab := table.Table{Columns: table.Heads("NAME", "SCOPE", "CREATED")}
					for _, t := range ts {
						tab.Add(table.Text(t.Name), table.Fig(t.Scope), table.Fig(t.Created.Local().Format(time.DateTime)))
					}
					return tab.WriteText(a.Out, "")
				},
			},
			{
				Name:      "rm",
				Usage:     "remove a token: the server refuses it from then on",
				ArgsUsage: "NAME",
				Flags:     []cli.Flag{dbFlag},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageError("serve token rm takes one token name, got %d arguments", c.NArg())
					}
					h, err := openServed(a, o.db)
					if err != nil {
						return err
					}
					defer h.Close()
					ok, err := h.RemoveToken(c.Args().First())
					if err != nil {
						return &contract.ExitError{Code: contract.ExitInfra, Err: err}
					}
					if !ok {
						return usageError("there is no token named %s (xrun serve token ls lists them)", c.Args().First())
					}
					fmt.Fprintf(a.Err, "removed token %s\n", c.Args().First())
					return nil
				},
			},
		},
	}
}

func printJSON(a *App, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	_, err = fmt.Fprintf(a.Out, "%s\n", data)
	return err
}
