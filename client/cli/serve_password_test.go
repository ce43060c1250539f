package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWithPasswordFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	if err := os.WriteFile(file, []byte("s3:cr/et@x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := withPasswordFile("postgres://xrun@db:5432/xrun?sslmode=disable", file)
	if err != nil {
		t.Fatal(err)
	}
	// The password is escaped in the URL and read back whole.
	if want := "postgres://xrun:s3%3Acr%2Fet%40x@db:5432/xrun?sslmode=disable"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	for _, c := range []struct{ db, file, want string }{
		{"history.db", file, "is the SQLite file"},
		{"postgres://db/xrun", file, "needs a user"},
		{"postgres://xrun:pw@db/xrun", file, "has a password and"},
		{"postgres://xrun@db/xrun", filepath.Join(dir, "missing"), "read the database password"},
		{"postgres://xrun@db/xrun", empty, "is empty"},
	} {
		if _, err := withPasswordFile(c.db, c.file); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("withPasswordFile(%s, %s) = %v, want an error saying %q", c.db, c.file, err, c.want)
		}
	}
}
