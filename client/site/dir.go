package site

// Where a site lives on disk: it is written beside the directory and takes
// its place whole, and a directory that holds anything else is refused.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// stagingPrefix begins the name of the directory beside the site's where
// a build writes, before the finished site takes the site's place: a build
// stopped or killed midway leaves the site as it was.
const stagingPrefix = ".xrun-report-"

// stage makes the staging directory beside dir, removing what an earlier
// build killed midway left there.
func stage(dir string) (string, error) {
	parent, base := filepath.Split(filepath.Clean(dir))
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("write the site: %w", err)
	}
	old, _ := filepath.Glob(filepath.Join(parent, stagingPrefix+base+".*"))
	for _, o := range old {
		os.RemoveAll(o)
	}
	tmp, err := os.MkdirTemp(parent, stagingPrefix+base+".")
	if err != nil {
		return "", fmt.Errorf("write the site: %w", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("write the site: %w", err)
	}
	return tmp, nil
}

var errNotRenamed = errors.New("not renamed")

// swap puts the finished site in staging in dir's place. dir's old site
// (clear refuses a directory that holds anything else) is renamed aside
// and the staged site renamed to dir, so that a build killed at any point
// leaves the old site whole, or no directory (which the next build
// makes), never a part of a site the next build would refuse; what is
// left aside has the staging prefix, which the next build removes. Where
// dir cannot be renamed (the working directory, a mount point, a link) the old
// site is cleared and the staged pages moved in, index.html last.
func swap(staging, dir string) error {
	if _, err := siteEntries(dir); err != nil {
		return err
	}
	aside := staging + "-old"
	err := errNotRenamed
	if fi, lerr := os.Lstat(dir); errors.Is(lerr, fs.ErrNotExist) {
		err = lerr
	} else if lerr == nil && fi.Mode()&fs.ModeSymlink == 0 {
		// A link to the site (a web server's directory) stays a link.
		err = os.Rename(dir, aside)
	}
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(staging, dir); err != nil {
			os.Rename(aside, dir)
			return fmt.Errorf("write the site: %w", err)
		}
		os.RemoveAll(aside)
		return nil
	}
	if err := clear(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write the site: %w", err)
	}
	entries, err := os.ReadDir(staging)
	if err != nil {
		return fmt.Errorf("write the site: %w", err)
	}
	// index.html last: a site without it is one clear refuses.
	sort.Slice(entries, func(i, j int) bool { return entries[j].Name() == "index.html" })
	for _, e := range entries {
		if err := os.Rename(filepath.Join(staging, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("write the site: %w", err)
		}
	}
	return os.Remove(staging)
}

func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write the site: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write the site: %w", err)
	}
	return nil
}

// ErrNotSite is returned for a directory that is neither empty nor a
// site Build wrote: Build replaces a site it wrote, nothing else.
var ErrNotSite = errors.New("is not empty and holds no site of xrun report (index.html, style.css, series/, jobs/): give a new or empty directory")

// refuseOthers refuses dir when it holds something other than a site an
// earlier Build wrote there (or nothing).
func refuseOthers(dir string) error {
	_, err := siteEntries(dir)
	return err
}

// siteEntries are dir's entries when it holds a site Build wrote, or
// nothing (none when it does not exist); ErrNotSite otherwise.
func siteEntries(dir string) ([]os.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("write the site: %w", err)
	}
	ours := map[string]bool{"index.html": true, "style.css": true, "series": true, "jobs": true}
	hasIndex := false
	for _, e := range entries {
		if !ours[e.Name()] {
			return nil, fmt.Errorf("%s %w", dir, ErrNotSite)
		}
		hasIndex = hasIndex || e.Name() == "index.html"
	}
	if len(entries) > 0 && !hasIndex {
		return nil, fmt.Errorf("%s %w", dir, ErrNotSite)
	}
	return entries, nil
}

// clear empties dir of the site an earlier Build wrote there, so that a
// job or series gone from the history leaves no page behind; a directory
// that holds anything else is refused.
func clear(dir string) error {
	entries, err := siteEntries(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("write the site: %w", err)
		}
	}
	return nil
}
