// WriteOut and ExtractOut carry the runner's output directory through the job's
// log, for backends that keep a finished job's log but not its files (a
// Kubernetes pod's log outlives its container; its files do not). At the end
// of a run the runner writes the directory as a gzipped tar, base64 in
// lines that each start with OutPrefix, between a begin and an end line; the
// client cuts those lines out of the log it shows and unpacks them.
//
// Every frame line carries the prefix, so a line that some other writer
// puts in the middle of the frame is skipped, not taken for data.

package contract

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// OutPrefix starts every line of a frame.
const OutPrefix = "xrun-out:"

// OutMaxBytes is the most a frame carries (before base64): kubelets rotate a
// container's log at 10 MiB by default, and a frame split across two log
// files cannot be read back. Over it, logs/ (the workers' logs, also in
// the job's log) is left out, then everything but results.json.
const OutMaxBytes = 6 << 20

const lineLen = 96

// WriteOut writes dir as a frame to w. It says in the begin line what it
// left out to stay within MaxBytes.
func WriteOut(w io.Writer, dir string) error {
	var data []byte
	var left string
	for _, keep := range []struct {
		what string
		fn   func(rel string) bool
	}{
		{"", func(string) bool { return true }},
		{"logs/", func(rel string) bool { return rel != "logs" && !strings.HasPrefix(rel, "logs/") }},
		{"all but results.json", func(rel string) bool { return rel == "results.json" }},
	} {
		var err error
		if data, err = pack(dir, keep.fn); err != nil {
			return err
		}
		left = keep.what
		if len(data) <= OutMaxBytes {
			break
		}
	}
	if len(data) > OutMaxBytes {
		return fmt.Errorf("the output directory is %d bytes packed, over the %d a log frame carries", len(data), OutMaxBytes)
	}
	sum := sha256.Sum256(data)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s begin %d", OutPrefix, len(data))
	if left != "" {
		fmt.Fprintf(bw, " left-out=%s", strings.ReplaceAll(left, " ", "_"))
	}
	bw.WriteByte('\n')
	enc := base64.StdEncoding.EncodeToString(data)
	for len(enc) > 0 {
		n := min(lineLen, len(enc))
		fmt.Fprintf(bw, "%s %s\n", OutPrefix, enc[:n])
		enc = enc[n:]
	}
	fmt.Fprintf(bw, "%s end %s\n", OutPrefix, hex.EncodeToString(sum[:]))
	return bw.Flush()
}

// pack is a gzipped tar of the files of dir that keep selects (by their
// slash path relative to dir), named out/...
func pack(dir string, keep func(rel string) bool) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		name := "out"
		if rel != "." {
			name += "/" + rel
			if !keep(rel) {
				if d.IsDir() && rel != "logs" {
					return nil
				}
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: info.ModTime()})
		case info.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: info.Size(), ModTime: info.ModTime()}); err != nil {
				return err
			}
			_, err = io.CopyN(tw, f, info.Size())
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ErrNoOutFrame is returned by Extract when the log holds no complete frame.
var ErrNoOutFrame = errors.New("the log holds no output frame")

// ExtractOut finds the last complete frame in log and returns the tar it
// carries (entries named out/...), and the log without any frame lines.
func ExtractOut(log []byte) (tarData []byte, rest []byte, err error) {
	var out bytes.Buffer
	var cur *strings.Builder
	var want int
	var found []byte
	var ferr error = ErrNoOutFrame
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		body, ok := strings.CutPrefix(line, OutPrefix+" ")
		if !ok {
			out.WriteString(line)
			out.WriteByte('\n')
			continue
		}
		switch {
		case strings.HasPrefix(body, "begin "):
			f := strings.Fields(body)
			n, perr := strconv.Atoi(f[1])
			if perr != nil {
				cur = nil
				continue
			}
			cur, want = &strings.Builder{}, n
		case strings.HasPrefix(body, "end "):
			if cur == nil {
				continue
			}
			data, derr := decode(cur.String(), want, strings.TrimSpace(strings.TrimPrefix(body, "end ")))
			cur = nil
			if derr != nil {
				ferr = derr
				continue
			}
			found, ferr = data, nil
		default:
			if cur != nil {
				cur.WriteString(body)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, out.Bytes(), err
	}
	if ferr != nil {
		return nil, out.Bytes(), ferr
	}
	zr, err := gzip.NewReader(bytes.NewReader(found))
	if err != nil {
		return nil, out.Bytes(), fmt.Errorf("output frame: %w", err)
	}
	tarData, err = io.ReadAll(zr)
	if err != nil {
		return nil, out.Bytes(), fmt.Errorf("output frame: %w", err)
	}
	return tarData, out.Bytes(), nil
}

func decode(enc string, want int, sum string) ([]byte, error) {
	data, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("output frame: %w", err)
	}
	if len(data) != want {
		return nil, fmt.Errorf("output frame: %d bytes, the frame said %d (a log rotated or cut mid-frame)", len(data), want)
	}
	got := sha256.Sum256(data)
	if hex.EncodeToString(got[:]) != sum {
		return nil, errors.New("output frame: checksum mismatch")
	}
	return data, nil
}

// FilterOut returns a writer that passes lines to w without the frame lines.
// Close flushes a last line without a newline.
func FilterOut(w io.Writer) io.WriteCloser { return &filter{w: w} }

type filter struct {
	w   io.Writer
	buf []byte
}

func (f *filter) Write(p []byte) (int, error) {
	f.buf = append(f.buf, p...)
	for {
		i := bytes.IndexByte(f.buf, '\n')
		if i < 0 {
			break
		}
		line := f.buf[:i+1]
		if !bytes.HasPrefix(line, []byte(OutPrefix+" ")) {
			if _, err := f.w.Write(line); err != nil {
				return len(p), err
			}
		}
		f.buf = f.buf[i+1:]
	}
	return len(p), nil
}

func (f *filter) Close() error {
	if len(f.buf) > 0 && !bytes.HasPrefix(f.buf, []byte(OutPrefix+" ")) {
		_, err := f.w.Write(f.buf)
		f.buf = nil
		return err
	}
	return nil
}
