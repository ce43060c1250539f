package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/client/site"
)

// The dashboard: the pages of xrun report --html, built from the
// server's history and served at /. A browser signs in once with a read
// (or admin) token through a form (POST /login, the token in the body,
// never in a URL); the server answers with a session cookie (HttpOnly,
// SameSite=Lax, Secure over TLS) that names a session it keeps in the
// history (by the hashes of the cookie and of the token, so that a
// restart does not sign browsers out), not the token. Each request checks
// that the session's token still exists, so removing the token signs its
// browsers out.

// SessionCookie names the dashboard's session cookie.
const SessionCookie = "xrun_session"

// sessionTTL is how long a browser stays signed in.
const sessionTTL = 12 * time.Hour

// staleAfter is how old a built site may grow before a request rebuilds
// it even without a post (the history changed by other means: xrun
// history accept or rm on the server's database).
const staleAfter = 5 * time.Minute

// dashboard is the site built from the history, rebuilt on the first
// request after a post landed.
type dashboard struct {
	root string // where the builds go

	mu    sync.Mutex // guards the fields below
	posts uint64     // posts stored so far
	built uint64     // posts the current build holds
	at    time.Time
	dir   string // the current build; "" before the first
	empty bool   // the history had no run at the last build

	build sync.Mutex // one build at a time
}

func newDashboard() *dashboard {
	return &dashboard{}
}

// posted notes that the history changed.
func (d *dashboard) posted() {
	d.mu.Lock()
	d.posts++
	d.mu.Unlock()
}

// currentSite returns the directory of a build of the history as it is,
// building one when a post landed since the last (or it is stale).
func (s *Server) currentSite() (dir string, empty bool, err error) {
	d := s.dash
	d.mu.Lock()
	fresh := d.dir != "" || d.empty
	fresh = fresh && d.built == d.posts && time.Since(d.at) < staleAfter
	dir, empty = d.dir, d.empty
	d.mu.Unlock()
	if fresh {
		return dir, empty, nil
	}
	d.build.Lock()
	defer d.build.Unlock()
	d.mu.Lock()
	posts := d.posts
	if (d.dir != "" || d.empty) && d.built == posts && time.Since(d.at) < staleAfter {
		dir, empty = d.dir, d.empty // another request built it meanwhile
		d.mu.Unlock()
		return dir, empty, nil
	}
	d.mu.Unlock()
	if d.root == "" {
		if d.root, err = os.MkdirTemp("", "xrun-serve-site-"); err != nil {
			return "", false, fmt.Errorf("make the dashboard's directory: %w", err)
		}
	}
	next, err := os.MkdirTemp(d.root, "build-")
	if err != nil {
		return "", false, fmt.Errorf("make the dashboard's directory: %w", err)
	}
	_, err = site.Build(s.h, site.Options{Dir: filepath.Join(next, "site"), Rule: nightly.DefaultRule(),
		Results: s.keptForSite})
	empty = errors.Is(err, site.ErrEmpty)
	if err != nil && !empty {
		os.RemoveAll(next)
		return "", false, err
	}
	d.mu.Lock()
	old := d.dir
	d.dir, d.empty, d.built, d.at = filepath.Join(next, "site"), empty, posts, time.Now()
	if empty {
		d.dir = ""
	}
	dir = d.dir
	d.mu.Unlock()
	if old != "" {
		// Requests that began on the old build may still read it: it
		// goes a while later.
		time.AfterFunc(time.Minute, func() { os.RemoveAll(filepath.Dir(old)) })
	}
	return dir, empty, nil
}

// Close removes the dashboard's builds.
func (s *Server) Close() error {
	s.dash.build.Lock()
	defer s.dash.build.Unlock()
	if s.dash.root == "" {
		return nil
	}
	return os.RemoveAll(s.dash.root)
}

// dashboardToken is the token a dashboard request is made with: the
// session cookie's, else a bearer token (curl, scripts); ok is false when
// there is neither, or the token is gone.
func (s *Server) dashboardToken(r *http.Request) (t history.Token, ok bool, err error) {
	hash := ""
	if c, cerr := r.Cookie(SessionCookie); cerr == nil && c.Value != "" {
		if hash, _, err = s.h.SessionToken(hashToken(c.Value)); err != nil {
			return history.Token{}, false, err
		}
	}
	if hash == "" {
		secret, ok := bearer(r)
		if !ok {
			return history.Token{}, false, nil
		}
		hash = hashToken(secret)
	}
	return s.h.TokenByHash(hash)
}

// servePage serves a page (or figure, or the style sheet) of the
// dashboard to a signed-in browser, and the sign-in form to one that is
// not, at the page's own address: after signing in the browser is back on
// the page asked for, so a job's page is a link to share.
func (s *Server) servePage(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeJSON(w, http.StatusNotFound, reply{Status: "not_found", Message: fmt.Sprintf("%s is no endpoint of this server (docs/server.md lists them).", r.URL.Path)})
		return
	}
	t, ok, err := s.dashboardToken(r)
	if err != nil {
		s.storageError(w, "read tokens", err)
		return
	}
	if !ok || !allows(t.Scope, ScopeRead) {
		msg := ""
		if ok {
			msg = fmt.Sprintf("Token %s has scope %s; the dashboard needs a read or admin token.", t.Name, t.Scope)
		}
		s.loginForm(w, r.URL.Path, msg, http.StatusUnauthorized)
		return
	}
	if rec, ok := w.(*recorder); ok {
		rec.token = t.Name
	}
	dir, empty, err := s.currentSite()
	if err != nil {
		if s.o.Log != nil {
			s.o.Log.Printf("build the dashboard: %v", err)
		}
		http.Error(w, "The dashboard could not be built; the server's log says why.", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Cache-Control", "private, no-cache")
	if empty {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_ = messagePage.Execute(w, map[string]string{"Title": "xrun", "Message": "The results history is empty: runs appear here once runners post to this server."})
		return
	}
	p := path.Clean("/" + r.URL.Path)
	if p == "/" {
		p = "/index.html"
	}
	file := filepath.Join(dir, filepath.FromSlash(p))
	if fi, err := os.Stat(file); err != nil || fi.IsDir() || strings.Contains(p, "/.") {
		http.Error(w, "No such page on this dashboard.", http.StatusNotFound)
		return
	}
	http.ServeFile(w, r, file)
}

// login signs a browser in with the token of the form's field "token".
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	next := r.PostFormValue("next")
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		next = "/" // only a page of this server
	}
	secret := strings.TrimSpace(r.PostFormValue("token"))
	if secret == "" {
		s.loginForm(w, next, "Give a read token (xrun serve token add --scope read NAME makes one).", http.StatusUnauthorized)
		return
	}
	t, ok, err := s.h.TokenByHash(hashToken(secret))
	if err != nil {
		s.storageError(w, "read tokens", err)
		return
	}
	if !ok {
		s.loginForm(w, next, "The token is not known to this server.", http.StatusUnauthorized)
		return
	}
	if rec, ok := w.(*recorder); ok {
		rec.token = t.Name
	}
	if !allows(t.Scope, ScopeRead) {
		s.loginForm(w, next, fmt.Sprintf("Token %s has scope %s; the dashboard needs a read or admin token.", t.Name, t.Scope), http.StatusForbidden)
		return
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		s.storageError(w, "make a session", err)
		return
	}
	id := hex.EncodeToString(b[:])
	if err := s.h.AddSession(hashToken(id), hashToken(secret), time.Now().Add(sessionTTL)); err != nil {
		s.storageError(w, "keep the session", err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: id, Path: "/", MaxAge: int(sessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: overHTTPS(r)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// overHTTPS reports whether the browser reached the server over HTTPS:
// the server's own TLS, or a reverse proxy in front that says so
// (X-Forwarded-Proto). The header only makes the cookie stricter (Secure:
// sent over HTTPS alone), so a client that forges it harms only itself.
func overHTTPS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// logout ends the browser's session.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil {
		if err := s.h.RemoveSession(hashToken(c.Value)); err != nil {
			s.storageError(w, "end the session", err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: overHTTPS(r)})
	s.loginForm(w, "/", "Signed out.", http.StatusOK)
}

// loginForm answers the sign-in form, which brings the browser back to
// next once signed in.
func (s *Server) loginForm(w http.ResponseWriter, next, msg string, code int) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = loginPage.Execute(w, map[string]string{"Next": next, "Message": msg})
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>xrun: sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}
input{font:inherit;width:100%;box-sizing:border-box;padding:.4rem;margin:.3rem 0 1rem}
button{font:inherit;padding:.4rem 1rem}.msg{color:#a00}</style></head>
<body><h1>xrun</h1>
<p>The results dashboard needs a read token (<code>xrun serve token add --scope read NAME</code> makes one).</p>
{{if .Message}}<p class="msg" id="message">{{.Message}}</p>{{end}}
<form method="post" action="/login" id="login">
<label for="token">Token</label>
<input type="password" name="token" id="token" autocomplete="current-password" required autofocus>
<input type="hidden" name="next" value="{{.Next}}">
<button type="submit">Sign in</button>
</form></body></html>
`))

var messagePage = template.Must(template.New("message").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1><p id="message">{{.Message}}</p></body></html>
`))
