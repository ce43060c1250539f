package site

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// archiveOf makes a tar stream of the entries given, in order.
func archiveOf(t *testing.T, entries ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		body := []byte("x")
		if h.Name == pagesEntry {
			body = []byte(`[{"path":"index.html","kind":"index","title":"xrun results"}]`)
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(body))
		}
		h.Mode = 0o644
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write(body)
		}
	}
	tw.Close()
	return buf.Bytes()
}

// Unpack writes a site that Archive sent as Build writes one, and refuses
// an archive with anything but a site's files, leaving the directory as
// it was.
func TestUnpack(t *testing.T) {
	h, _ := fixture(t)
	built := t.TempDir()
	pages := build(t, h, built)
	var buf bytes.Buffer
	if err := Archive(&buf, built, pages); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "site")
	got, err := Unpack(dir, bytes.NewReader(buf.Bytes()))
	if err != nil || len(got) != len(pages) {
		t.Fatalf("Unpack: %v, %d pages of %d", err, len(got), len(pages))
	}
	want, have := tree(t, built), tree(t, dir)
	if len(want) != len(have) {
		t.Errorf("unpacked %d files, built %d", len(have), len(want))
	}
	for name, data := range want {
		if !bytes.Equal(have[name], data) {
			t.Errorf("%s differs", name)
		}
	}
	reg := func(name string) tar.Header { return tar.Header{Name: name, Typeflag: tar.TypeReg} }
	for _, c := range []struct {
		name    string
		entries []tar.Header
		want    string
	}{
		{"a path out of the site", []tar.Header{reg(pagesEntry), reg("site/index.html"), reg("site/../../evil")}, "no file of a site"},
		{"a link", []tar.Header{reg(pagesEntry), reg("site/index.html"), {Name: "site/jobs/x.html", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}, "no file of a site"},
		{"no list of pages", []tar.Header{reg("site/index.html")}, "no list of pages"},
		{"no index", []tar.Header{reg(pagesEntry), reg("site/style.css")}, "no index.html"},
	} {
		_, err := Unpack(dir, bytes.NewReader(archiveOf(t, c.entries...)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if now := tree(t, dir); len(now) != len(want) {
			t.Errorf("%s: the site has %d files after the refusal, %d before", c.name, len(now), len(want))
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "evil")); err == nil {
		t.Error("Unpack wrote outside the site")
	}
}
