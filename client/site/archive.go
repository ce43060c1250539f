package site

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// An archive is a site built elsewhere (by xrun serve, for xrun report
// --server) as one tar stream: first pagesEntry, the pages' list as
// Build returned it, then every file of the site under siteDir/.
const (
	pagesEntry = "pages.json"
	siteDir    = "site"
	// maxArchiveFile caps one file of an archive read back.
	maxArchiveFile = 256 << 20
)

// Archive writes the site Build wrote into dir, and its pages, as a tar
// stream to w.
func Archive(w io.Writer, dir string, pages []Page) error {
	tw := tar.NewWriter(w)
	list, err := json.Marshal(pages)
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: pagesEntry, Mode: 0o644, Size: int64(len(list)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(list); err != nil {
		return err
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: siteDir + "/" + filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("send the site: %w", err)
	}
	return tw.Close()
}

// Unpack writes the site of an archive (Archive) into dir as Build
// writes one: a directory that holds anything but an earlier site is
// refused (ErrNotSite), the files are staged beside it and take its
// place once all are read, so that an archive cut short leaves dir as it
// was. It returns the archive's pages.
func Unpack(dir string, r io.Reader) ([]Page, error) {
	if err := refuseOthers(dir); err != nil {
		return nil, err
	}
	staging, err := stage(dir)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staging)
	tr := tar.NewReader(r)
	var pages []Page
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the site: %w", err)
		}
		if hdr.Name == pagesEntry {
			if err := json.NewDecoder(io.LimitReader(tr, maxArchiveFile)).Decode(&pages); err != nil {
				return nil, fmt.Errorf("read the site's pages: %w", err)
			}
			continue
		}
		rel, ok := strings.CutPrefix(hdr.Name, siteDir+"/")
		clean := path.Clean(rel)
		if !ok || hdr.Typeflag != tar.TypeReg || clean != rel || strings.HasPrefix(clean, "../") || path.IsAbs(clean) || hdr.Size > maxArchiveFile {
			return nil, fmt.Errorf("read the site: the archive holds %q, which is no file of a site", hdr.Name)
		}
		p := filepath.Join(staging, filepath.FromSlash(clean))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("write the site: %w", err)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, fmt.Errorf("write the site: %w", err)
		}
		_, err = io.Copy(f, io.LimitReader(tr, hdr.Size))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("write the site: %w", err)
		}
	}
	if pages == nil {
		return nil, errors.New("read the site: the archive has no list of pages")
	}
	if _, err := os.Stat(filepath.Join(staging, "index.html")); err != nil {
		return nil, errors.New("read the site: the archive has no index.html")
	}
	return pages, swap(staging, dir)
}
