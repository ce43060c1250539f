package nightly

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/regress"
)

// The alert reaches the webhook as JSON with the bearer token.
func TestAlertPost(t *testing.T) {
	var got Alert
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("decode: %v", err)
		}
	}))
	defer srv.Close()
	a := &Alert{Title: "1 confirmed regression", Text: "x", Created: time.Unix(0, 0).UTC()}
	if err := a.Post(context.Background(), srv.URL, "tok", nil); err != nil {
		t.Fatal(err)
	}
	if got.Title != a.Title || auth != "Bearer tok" {
		t.Errorf("the webhook got %+v with %q", got, auth)
	}
}

// A webhook URL with a password, answered by a redirect: the alert goes
// nowhere else, and neither the error nor the log lines show the password.
func TestAlertPostRedirectAndPassword(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "http://bot:hunter2@", 1)
	var lines []string
	err := (&Alert{Title: "t"}).Post(context.Background(), url, "s3cret-alert-token", func(f string, args ...any) {
		lines = append(lines, f)
	})
	if err == nil || !strings.Contains(err.Error(), "redirects are not followed") {
		t.Fatalf("err = %v", err)
	}
	for _, s := range append(lines, err.Error()) {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "s3cret-alert-token") {
			t.Errorf("a secret in %q", s)
		}
	}
}

// Each regressed point names who confirmed it: the night that confirmed
// the earlier night's suspect is its own confirmer (the alert named the
// suspect), a regression that holds names the run that confirmed it (the
// alert left it empty), and a rerun is named as one.
func TestAlertSaysWhoConfirmed(t *testing.T) {
	point := func(impl string, v regress.Verdict) Point {
		v.Status = regress.Regressed
		return Point{Case: "N=64", Implementation: impl, MedianMS: 2, Verdict: v}
	}
	rep := &Report{Runs: []Run{{Experiment: "k", JobID: "night2", GPU: "H200", Points: []Point{
		point("a", regress.Verdict{Confirms: "night1"}),
		point("b", regress.Verdict{Since: "night0"}),
		point("c", regress.Verdict{ConfirmedBy: "rerun9"}),
	}}}}
	al := rep.Alert()
	if al == nil || len(al.Regressions) != 3 {
		t.Fatalf("alert %+v", al)
	}
	want := []struct{ by, text string }{
		{"night2", "job night2, which confirms the suspect of job night1"},
		{"", "job night2, regressed since job night0"},
		{"rerun9", "job night2, confirmed by rerun rerun9"},
	}
	for i, w := range want {
		if g := al.Regressions[i]; g.ConfirmedBy != w.by {
			t.Errorf("%s: confirmed_by %q, want %q", g.Implementation, g.ConfirmedBy, w.by)
		}
		if !strings.Contains(al.Text, w.text) {
			t.Errorf("the text lacks %q:\n%s", w.text, al.Text)
		}
	}
}
