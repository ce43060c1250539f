package summary

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
