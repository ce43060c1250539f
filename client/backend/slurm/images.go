package slurm

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// The docker runtime keeps each job image on the cluster, in the job
// directories' images/, as the docker save archive that a node without
// the image loads, split so that images share what they hold in common:
// a CUDA base is gigabytes, and each experiment's image (and each
// version of the runner's) is that base and a few megabytes on top.
//
//	images/blobs/SHA256   each large file of an archive (its layers),
//	                      named by its content, once for every image
//	images/NAME/          one image (imageFile of its reference): the
//	                      archive's small files (manifest, configuration)
//	                      and a link into blobs/ for each large one
//
// A job's script streams the archive back with tar -h into docker load
// (dockerScript). A copy a killed submit left half-written is NAME.PID or
// blobs/SHA256.PID; an archive of an earlier version, NAME.tar, is still
// loaded by the jobs that name it, and listed and pruned as before.

// blobMin is the size from which a file of an archive is a blob: its
// layers; the manifest and configurations stay in the image's directory.
const blobMin = 64 << 10

// blobsDir is the blobs' directory under images/.
const blobsDir = "blobs"

// sendImage copies the docker save archive r of image ref to the
// cluster, as root/images/imageFile(ref), sending only the blobs that
// have (the blobs' names on the cluster) lacks, and adds those it sent
// to have. It returns how many bytes of blobs the cluster held already.
func (b *Backend) sendImage(ctx context.Context, r io.Reader, root, ref string, have map[string]bool) (kept int64, err error) {
	tmp, err := os.CreateTemp("", "xrun-layer-*")
	if err != nil {
		return 0, fmt.Errorf("a temporary file for the image's layers: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	images := quote(root + "/images")
	var stub bytes.Buffer
	tw := tar.NewWriter(&stub)
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return kept, fmt.Errorf("read the image's archive: %w", err)
		}
		name := path.Clean(h.Name)
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return kept, fmt.Errorf("the image's archive holds %q, outside it", h.Name)
		}
		if h.Typeflag != tar.TypeReg || h.Size < blobMin {
			if err := tw.WriteHeader(h); err != nil {
				return kept, err
			}
			if _, err := io.Copy(tw, tr); err != nil {
				return kept, fmt.Errorf("read the image's archive: %w", err)
			}
			continue
		}
		if err := tmp.Truncate(0); err != nil {
			return kept, err
		}
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return kept, err
		}
		sum := sha256.New()
		n, err := io.Copy(io.MultiWriter(tmp, sum), tr)
		if err != nil {
			return kept, fmt.Errorf("read the image's archive: %w", err)
		}
		blob := hex.EncodeToString(sum.Sum(nil))
		if have[blob] {
			kept += n
		} else {
			if _, err := tmp.Seek(0, io.SeekStart); err != nil {
				return kept, err
			}
			script := fmt.Sprintf(`cd %s/%s && t=%s.$$ && cat > "$t" && mv -f "$t" %s`, images, blobsDir, blob, blob)
			if _, err := b.Shell.Run(ctx, script, io.LimitReader(tmp, n)); err != nil {
				return kept, err
			}
			have[blob] = true
		}
		// A link from where the file was in the archive to its blob.
		link := strings.Repeat("../", strings.Count(name, "/")+1) + blobsDir + "/" + blob
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: link, Mode: 0o777, ModTime: h.ModTime}); err != nil {
			return kept, err
		}
	}
	if err := tw.Close(); err != nil {
		return kept, err
	}
	// The image's directory appears whole, or not at all.
	dir := quote(imageFile(ref))
	script := fmt.Sprintf(`cd %s && t=%s.$$ && rm -rf "$t" && mkdir "$t" && tar -xf - -C "$t" && rm -rf %s && mv "$t" %s`, images, dir, dir, dir)
	if _, err := b.Shell.Run(ctx, script, &stub); err != nil {
		return kept, err
	}
	return kept, nil
}

// loadImage is the part of a batch script that loads image from its
// directory dir (sendImage's) unless the node has it.
func loadImage(dir string) string {
	return fmt.Sprintf(`if ! docker image inspect "$image" >/dev/null 2>&1; then
	echo "xrun: loading the job's image on $(hostname)" >&2
	tar -chf - -C %s . | docker load -q >&2
	docker image inspect "$image" >/dev/null 2>&1 || { echo "xrun: the job's image did not load from %s" >&2; echo 4 > "$d/%s"; exit 4; }
fi
`, quote(dir), dir, exitFile)
}
