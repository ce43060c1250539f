package buildctx

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// ModTime is the modification time of every tar entry. A fixed time keeps
// the tar, and the classic builder's COPY cache keys, identical for
// identical content.
var ModTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Extra is a file written into the tar beside the experiment: the
// Dockerfile, the runner binary. Its content is Data, or the file at Src
// when Data is nil.
type Extra struct {
	// Name is the slash path inside the context; it may not be under "exp/".
	Name string
	// Mode holds the permission bits; 0 means 0644.
	Mode fs.FileMode
	Data []byte
	Src  string
	// Dir makes an empty directory instead of a file.
	Dir bool
}

// entry is one tar entry before writing.
type entry struct {
	name  string
	kind  byte // 'd', 'l', 'f'
	mode  int64
	size  int64
	link  string
	data  []byte
	src   string
	sum   string // expected content hash of src, when known
	extra bool
}

// WriteTar writes the context as a tar: the extras, the "exp/" directory
// and its entries, sorted by name, with a fixed mtime, uid/gid 0, no user
// names, and modes normalised to 0755 (directories, executables) or 0644,
// so the same content always gives the same bytes. Parent directories are
// written for every entry. A file whose content changed since Collect is an
// error.
func (c *Context) WriteTar(w io.Writer, extras ...Extra) error {
	return c.write(w, extras, func(entry) bool { return true })
}

// WriteCode writes the "exp/" directory and its entries alone, as WriteTar
// does: the experiment's code, to copy into a container made from an image
// that has everything else.
func (c *Context) WriteCode(w io.Writer) error {
	return c.write(w, nil, func(e entry) bool { return e.name == Root || strings.HasPrefix(e.name, Root+"/") })
}

// WriteExtras writes a build context of the extras alone (no code), as
// WriteTar does.
func WriteExtras(w io.Writer, extras ...Extra) error {
	return (&Context{}).write(w, extras, func(e entry) bool { return e.name != Root })
}

// HashExtras is HashWith of a context with no code: the key of an image
// built from WriteExtras.
func HashExtras(extras ...Extra) (string, error) { return (&Context{}).HashWith(extras...) }

func (c *Context) write(w io.Writer, extras []Extra, keep func(entry) bool) error {
	entries, err := c.entries(extras)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		if !keep(e) {
			continue
		}
		if err := writeEntry(tw, e); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("finish build context tar: %w", err)
	}
	return nil
}

func (c *Context) entries(extras []Extra) ([]entry, error) {
	var entries []entry
	names := map[string]bool{}
	for _, x := range extras {
		name := x.Name
		if name == "" || path.Clean(name) != name || path.IsAbs(name) || strings.HasPrefix(name, "../") || name == ".." {
			return nil, fmt.Errorf("extra file name %q is not a clean relative path; use a name such as \"Dockerfile\"", name)
		}
		if name == Root || strings.HasPrefix(name, Root+"/") {
			return nil, fmt.Errorf("extra file %q would overwrite the experiment under %s/; choose another name", name, Root)
		}
		if names[name] {
			return nil, fmt.Errorf("extra file %q is given twice; give each extra file its own name", name)
		}
		names[name] = true
		mode := int64(x.Mode.Perm())
		if mode == 0 {
			mode = 0o644
		}
		if x.Dir {
			entries = append(entries, entry{name: name, kind: 'd', mode: 0o755, extra: true})
			continue
		}
		e := entry{name: name, kind: 'f', mode: mode, data: x.Data, src: x.Src, extra: true}
		if x.Data == nil {
			if x.Src == "" {
				return nil, fmt.Errorf("extra file %q has neither data nor a source path", name)
			}
			st, err := os.Stat(x.Src)
			if err != nil {
				return nil, fmt.Errorf("read extra file %q: %w", name, err)
			}
			if !st.Mode().IsRegular() {
				return nil, fmt.Errorf("extra file %q: %s is not a regular file", name, x.Src)
			}
			e.size = st.Size()
		} else {
			e.size = int64(len(x.Data))
		}
		entries = append(entries, e)
	}
	entries = append(entries, entry{name: Root, kind: 'd', mode: 0o755})
	names[Root] = true
	for _, f := range c.Files {
		e := entry{name: f.Dst, kind: f.kind(), mode: 0o644}
		switch e.kind {
		case 'd':
			e.mode = 0o755
		case 'l':
			e.mode = 0o777
			e.link = f.Link
		case 'x':
			e.kind, e.mode = 'f', 0o755
			fallthrough
		default:
			e.src, e.size, e.sum = f.Src, f.Size, f.Sum
		}
		entries = append(entries, e)
		names[f.Dst] = true
	}
	// Parents first: a prefix sorts before its extensions.
	for _, e := range entries {
		for d := path.Dir(e.name); d != "." && !names[d]; d = path.Dir(d) {
			names[d] = true
			entries = append(entries, entry{name: d, kind: 'd', mode: 0o755})
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	return entries, nil
}

func writeEntry(tw *tar.Writer, e entry) error {
	h := &tar.Header{
		Name:    e.name,
		Mode:    e.mode,
		ModTime: ModTime,
		Format:  tar.FormatPAX,
	}
	switch e.kind {
	case 'd':
		h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
	case 'l':
		h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
	default:
		h.Typeflag, h.Size = tar.TypeReg, e.size
	}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("write %s to the build context tar: %w", e.name, err)
	}
	if e.kind != 'f' {
		return nil
	}
	if e.data != nil {
		if _, err := tw.Write(e.data); err != nil {
			return fmt.Errorf("write %s to the build context tar: %w", e.name, err)
		}
		return nil
	}
	return copyFile(tw, e)
}

// copyFile streams e.src into the tar, checking that it still has the size
// and content hash Collect saw.
func copyFile(tw *tar.Writer, e entry) error {
	f, err := os.Open(e.src)
	if err != nil {
		return fmt.Errorf("read %s: %w", e.src, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tw, h), io.LimitReader(f, e.size))
	if err != nil {
		return fmt.Errorf("write %s to the build context tar: %w", e.src, err)
	}
	var probe [1]byte
	if extra, _ := f.Read(probe[:]); n != e.size || extra > 0 {
		return fmt.Errorf("read %s: it changed size since the context was hashed; retry when it is no longer written to", e.src)
	}
	if e.sum != "" && hex.EncodeToString(h.Sum(nil)) != e.sum {
		return fmt.Errorf("read %s: it changed since the context was hashed; retry when it is no longer written to", e.src)
	}
	return nil
}

// HashWith returns the hex SHA-256 of the context hash and the extras'
// names, modes and contents: a key for everything WriteTar would write.
func (c *Context) HashWith(extras ...Extra) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "xrun-build-v1\x00%s\n", c.Hash)
	sorted := append([]Extra(nil), extras...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, x := range sorted {
		if x.Dir {
			fmt.Fprintf(h, "%s\x00dir\n", x.Name)
			continue
		}
		sum := sha256.New()
		if x.Data != nil {
			sum.Write(x.Data)
		} else {
			f, err := os.Open(x.Src)
			if err != nil {
				return "", fmt.Errorf("hash extra file %q: %w", x.Name, err)
			}
			_, err = io.Copy(sum, f)
			f.Close()
			if err != nil {
				return "", fmt.Errorf("hash extra file %q: %w", x.Name, err)
			}
		}
		exec := x.Mode&0o111 != 0
		fmt.Fprintf(h, "%s\x00%t\x00%x\n", x.Name, exec, sum.Sum(nil))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
