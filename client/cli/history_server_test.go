package cli

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/server"
	"github.com/xrun-dev/xrun/contract"
)

// history --server prints what history prints of the same history read
// locally: the server judges and renders it with the same code.
func TestHistoryFromServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), history.FileName)
	h, err := history.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.ImportFile(context.Background(), filepath.Join("..", "..", "experiments", "039-gla-pingpong", "results"), nil, nil); err != nil {
		t.Fatal(err)
	}
	read, err := server.NewToken(h, "reader", server.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}
	postTok, err := server.NewToken(h, "runners", server.ScopePost)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(h, server.Options{}))
	defer srv.Close()
	ta := newTestApp(t)
	token := read
	ta.Getenv = func(k string) string {
		if k == EnvServerToken {
			return token
		}
		return ""
	}
	ctx := context.Background()
	for _, form := range [][]string{{"--json"}, {"--csv"}, {"--last", "2"}, {"--impl", "pipelined", "--case", "T=1024"}} {
		local := append([]string{"history", "--history", path}, form...)
		if code := ta.run(ctx, append(local, "gla-pingpong")...); code != 0 {
			t.Fatalf("%v: %s", local, ta.err)
		}
		want := ta.out.String()
		remote := append([]string{"history", "--server", srv.URL + "/"}, form...)
		if code := ta.run(ctx, append(remote, "gla-pingpong")...); code != 0 {
			t.Fatalf("%v: %s", remote, ta.err)
		}
		if got := ta.out.String(); got != want || len(got) < 100 {
			t.Errorf("%v printed\n%s\nthe local history\n%s", remote, got, want)
		}
	}
	// Refusals say why, with the exit code of the user's mistake, and
	// never show the token.
	for _, c := range []struct {
		token string
		args  []string
		want  string
	}{
		{read, []string{"no-such-experiment"}, "answered 404: the results history has no run that matches"},
		{"", []string{"gla-pingpong"}, "needs a read token in XRUN_SERVER_TOKEN"},
		{"xrun_wrongtoken", []string{"gla-pingpong"}, "answered 401: the token is not known to this server"},
		{postTok, []string{"gla-pingpong"}, "answered 403: token runners has scope post"},
		{read, []string{"--plot", t.TempDir(), "gla-pingpong"}, "--plot draws from a local history"},
	} {
		token = c.token
		code := ta.run(ctx, append([]string{"history", "--server", srv.URL}, c.args...)...)
		if code != contract.ExitUsage || !strings.Contains(ta.err.String(), c.want) || (c.token != "" && strings.Contains(ta.err.String(), c.token)) {
			t.Errorf("token %q, %v: exit %d, %q; want %d saying %q", c.token, c.args, code, ta.err.String(), contract.ExitUsage, c.want)
		}
	}
	srv.Close()
	token = read
	if code := ta.run(ctx, "history", "--server", srv.URL, "gla-pingpong"); code != contract.ExitInfra || !strings.Contains(ta.err.String(), "is xrun serve running there?") {
		t.Errorf("a server that is gone: exit %d, %q", code, ta.err.String())
	}
}
