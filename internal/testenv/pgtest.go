// Postgres starts a throwaway PostgreSQL server for tests: initdb
// and pg_ctl of the machine's PostgreSQL in a temporary directory, on a
// free port of 127.0.0.1, removed when the test ends. No root is needed;
// as root the server runs as the postgres user (or nobody), since
// PostgreSQL refuses to run as root.

package testenv

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
	"sync"
	"syscall"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx"
)

// Postgres starts a throwaway PostgreSQL server on a free port of
// 127.0.0.1 and returns its URL up to the database's name
// ("postgres://xrun@127.0.0.1:PORT/"). It stops and removes it when t
// ends. PostgreSQL refuses to run as root: as root it runs as the
// postgres user (or nobody).
func Postgres(t testing.TB) string {
	t.Helper()
	return PostgresOn(t, "")
}

// PostgresOn is Postgres listening on addr too (an IPv4 address of this
// machine, "" for none), trusting connections from addr's /16: a server
// that pods or containers on a bridge of this machine reach. The URL it
// returns is 127.0.0.1's.
func PostgresOn(t testing.TB, addr string) string {
	t.Helper()
	bin := PostgresBin()
	if bin == "" {
		// CI installs it: a CI run without it is broken, not excused.
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
	listen := "127.0.0.1"
	if addr != "" {
		ip := net.ParseIP(addr).To4()
		if ip == nil {
			t.Fatalf("PostgresOn: %q is not an IPv4 address", addr)
		}
		listen += "," + addr
		hba := fmt.Sprintf("host all all %s/16 trust\n", ip.Mask(net.CIDRMask(16, 32)))
		f, err := os.OpenFile(filepath.Join(data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString(hba)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	// fsync off: a test's server is thrown away.
	run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-o",
		fmt.Sprintf("-p %d -h %s -k %s -F -c max_connections=200", port, listen, dir), "start")
	t.Cleanup(func() { run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop") })
	return fmt.Sprintf("postgres://xrun@127.0.0.1:%d/", port)
}

// PostgresDatabases starts a throwaway PostgreSQL server (Start) and returns a
// maker of databases on it: each call creates an empty database of its
// own, named prefix_N, and returns its URL, for a subtest that needs a
// history apart from the others'.
func PostgresDatabases(t testing.TB, prefix string) func(t testing.TB) string {
	t.Helper()
	base := Postgres(t)
	admin, err := sql.Open("pgx", base+"postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	var mu sync.Mutex
	n := 0
	return func(t testing.TB) string {
		t.Helper()
		mu.Lock()
		n++
		name := fmt.Sprintf("%s_%d", prefix, n)
		mu.Unlock()
		if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
			t.Fatalf("create database %s: %v", name, err)
		}
		return base + name + "?sslmode=disable"
	}
}

// PostgresBin is the directory of PostgreSQL's initdb and pg_ctl: on
// PATH, else Debian's newest /usr/lib/postgresql/N/bin; "" when there is
// none.
func PostgresBin() string {
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

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
