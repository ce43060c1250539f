package xruntest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/history"
)

// Server is an xrun serve process of the binary under test on an SQLite
// history of its own, with a post and a read token, and an
// XDG_CONFIG_HOME whose config's server: is it (Env), so that a submit
// posts there with nothing typed per job.
type Server struct {
	Base      string // http://HOST:PORT
	DB        string
	Post      string // a post token
	Read      string // a read token
	ConfigDir string
	log       LockedBuffer
	cmd       *exec.Cmd
}

var servingLine = regexp.MustCompile(`serving results history .* on (http://\S+) `)

// Serve starts xrun serve on addr (HOST:0 picks a port) for the rest of
// t, on an SQLite history of its own, and fails t unless it serves
// within a minute.
func (x *Xrun) Serve(t testing.TB, addr string) *Server { return x.ServeDB(t, addr, "") }

// ServeDB is Serve on the history db (an SQLite file or a postgres://
// URL; "": a file of its own).
func (x *Xrun) ServeDB(t testing.TB, addr, db string) *Server {
	t.Helper()
	dir := t.TempDir()
	if db == "" {
		db = filepath.Join(dir, "served.db")
	}
	s := &Server{DB: db, ConfigDir: filepath.Join(dir, "config")}
	token := func(name, scope string) string {
		r := x.Run(t, time.Minute, "serve", "token", "add", "--db", s.DB, "--scope", scope, name)
		Expect(t, r, 0)
		return strings.TrimSpace(r.Stdout)
	}
	s.Post, s.Read = token("runners", "post"), token("reader", "read")

	s.cmd = exec.Command(x.Bin, "serve", "--db", s.DB, "--addr", addr)
	s.cmd.Env = x.Env()
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.cmd.Process.Signal(os.Interrupt)
		s.cmd.Wait()
		if t.Failed() {
			t.Logf("xrun serve's log:\n%s", s.Log())
		}
	})
	at := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(&s.log, sc.Text())
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case at <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case s.Base = <-at:
	case <-time.After(time.Minute):
		t.Fatalf("xrun serve did not say where it serves within a minute:\n%s", s.Log())
	}

	if err := os.MkdirAll(filepath.Join(s.ConfigDir, "xrun"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.ConfigDir, "xrun", "post-token"), []byte(s.Post+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.SetURL(t, s.Base)
	return s
}

// SetURL makes url the config's server: (with the post token).
func (s *Server) SetURL(t testing.TB, url string) {
	t.Helper()
	cfg := fmt.Sprintf("server:\n  url: %s\n  token_file: post-token\n", url)
	if err := os.WriteFile(filepath.Join(s.ConfigDir, "xrun", "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Env is what a submit needs to post to s through xrun's config alone:
// the config directory, and no XRUN_POST_* of the shell.
func (s *Server) Env() []string {
	return []string{"XDG_CONFIG_HOME=" + s.ConfigDir, "XRUN_POST_URL=", "XRUN_POST_TOKEN="}
}

// Pid is the server's process id (its memory and CPU time are in
// /proc/PID).
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Log is what the server logged so far.
func (s *Server) Log() string { return s.log.String() }

// RunsOf are the server's runs of job id, from GET /api/v1/runs with the
// read token.
func (s *Server) RunsOf(t testing.TB, id string) []history.Run {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.Base+"/api/v1/runs", nil)
	req.Header.Set("Authorization", "Bearer "+s.Read)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/runs: %d %s", resp.StatusCode, body)
	}
	var runs, of []history.Run
	if err := json.Unmarshal(body, &runs); err != nil {
		t.Fatalf("GET /api/v1/runs: %v\n%s", err, body)
	}
	for _, r := range runs {
		if r.JobID == id {
			of = append(of, r)
		}
	}
	return of
}

// PostFile posts a results.json to s with the post token, as a runner
// does, and returns the answer's status code.
func (s *Server) PostFile(t testing.TB, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.Base+"/api/v1/results", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+s.Post)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// LockedBuffer is a bytes.Buffer safe to read while a process writes it:
// a command's output that a test watches as it runs.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// BridgeAddress is this host's IPv4 address on the docker0 bridge, where
// a job's container reaches a server of the host.
func BridgeAddress(t testing.TB) string {
	t.Helper()
	ifc, err := net.InterfaceByName("docker0")
	if err != nil {
		t.Fatalf("no docker0 bridge for the container to reach this host: %v", err)
	}
	addrs, _ := ifc.Addrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	t.Fatal("docker0 has no IPv4 address")
	return ""
}
