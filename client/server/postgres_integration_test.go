//go:build integration

package server

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/xrun-dev/xrun/client/history"
)

// TestServerPostgres runs the server's suite on a PostgreSQL server it
// starts itself (initdb and pg_ctl in a temporary directory), each
// subtest in a database of its own. Under CI=true a machine without
// PostgreSQL fails the test: CI installs it (scripts/setup.sh).
func TestServerPostgres(t *testing.T) {
	base := startPostgres(t)
	admin, err := sql.Open("pgx", base+"postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var n atomic.Int32
	runSuite(t, func(t *testing.T) *history.Store {
		name := fmt.Sprintf("suite_%d", n.Add(1))
		if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
			t.Fatal(err)
		}
		h, err := history.Open(base + name + "?sslmode=disable")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		if !h.Postgres() {
			t.Fatal("the history opened SQLite, not PostgreSQL")
		}
		return h
	})
	// Opening it again finds the layout applied: goose applies nothing.
	h, err := history.Open(base + "suite_1?sslmode=disable")
	if err != nil {
		t.Fatalf("open again: %v", err)
	}
	h.Close()
}

// startPostgres starts a throwaway PostgreSQL server on a free port of
// 127.0.0.1 and returns its URL up to the database's name
// ("postgres://xrun@127.0.0.1:PORT/"). It stops and removes it when t
// ends. PostgreSQL refuses to run as root: as root it runs as the
// postgres user (or nobody).
func startPostgres(t *testing.T) string {
	t.Helper()
	bin := postgresBin()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PostgreSQL's initdb is not on this machine (CI installs it: scripts/setup.sh's postgresql)")
		}
		t.Skip("PostgreSQL's initdb is not on this machine: install postgresql (scripts/setup.sh)")
	}
	dir, err := os.MkdirTemp("", "xrun-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			u, err = user.Lookup("nobody")
		}
		if err != nil {
			t.Fatalf("as root, PostgreSQL needs a user to run as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			logData, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("%s %s: %v\n%s\n%s", name, strings.Join(args, " "), err, out, logData)
		}
	}
	data := filepath.Join(dir, "data")
	run("initdb", "-D", data, "-U", "xrun", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	port := freePort(t)
	// fsync off: a test's server is thrown away.
	run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-o",
		fmt.Sprintf("-p %d -h 127.0.0.1 -k %s -F -c max_connections=200", port, dir), "start")
	t.Cleanup(func() { run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop") })
	return fmt.Sprintf("postgres://xrun@127.0.0.1:%d/", port)
}

// postgresBin is the directory of PostgreSQL's initdb and pg_ctl: on
// PATH, else Debian's newest /usr/lib/postgresql/N/bin; "" when there is
// none.
func postgresBin() string {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
