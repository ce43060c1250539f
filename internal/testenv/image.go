package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// BusyboxImage is a tiny image made from the busybox-static binary of this
// machine: /bin/busybox and its applets, nothing else.
const BusyboxImage = "xrun-test/busybox:latest"

// busyboxApplets are the commands test containers use.
var busyboxApplets = []string{"sh", "echo", "cat", "mkdir", "sleep", "ls", "printf", "true", "false", "date", "hostname", "env", "test"}

// ScriptImage is BusyboxImage whose entrypoint runs the shell script in
// the container's environment variable ScriptEnv: a job whose code is a
// line of shell, for the backends' conformance suite.
const ScriptImage = "xrun-test/script:latest"

// ScriptEnv names the variable ScriptImage's entrypoint runs.
const ScriptEnv = "XRUN_TEST_SCRIPT"

// EnsureBusybox makes BusyboxImage in the daemon at host (a unix:// or
// plain address the tests own) unless it is there, and returns its ref.
func EnsureBusybox(t testing.TB, host string) string {
	t.Helper()
	return ensureBusyboxAs(t, host, BusyboxImage)
}

// EnsureScriptImage makes ScriptImage in the daemon at host unless it is
// there, and returns its ref.
func EnsureScriptImage(t testing.TB, host string) string {
	t.Helper()
	return ensureBusyboxAs(t, host, ScriptImage, `ENTRYPOINT ["/bin/sh", "-c", "eval \"$`+ScriptEnv+`\""]`)
}

// ensureBusyboxAs imports the busybox image as ref with the Dockerfile
// instructions changes, unless ref is there.
func ensureBusyboxAs(t testing.TB, host, ref string, changes ...string) string {
	t.Helper()
	cli, err := client.New(client.WithHost(host))
	if err != nil {
		t.Fatalf("make client for %s: %v", host, err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		return ref
	}
	bb := ""
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		if isExec(p) {
			bb = p
			break
		}
	}
	if bb == "" {
		Missing(t, "busybox is not installed (Debian package busybox-static)")
	}
	if out, err := exec.Command(bb, "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "BusyBox") {
		Missing(t, "%s does not run: %v", bb, err)
	}
	data, err := os.ReadFile(bb)
	if err != nil {
		t.Fatalf("read busybox: %v", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := func(h *tar.Header) {
		h.ModTime = time.Unix(0, 0)
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	hdr(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755})
	hdr(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777})
	hdr(&tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data))})
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	for _, a := range busyboxApplets {
		hdr(&tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	rc, err := cli.ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, ref, client.ImageImportOptions{Changes: changes})
	if err != nil {
		t.Fatalf("import busybox image into %s: %v", host, err)
	}
	defer rc.Close()
	var out bytes.Buffer
	out.ReadFrom(rc)
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		t.Fatalf("import busybox image into %s: %v\n%s", host, err, out.String())
	}
	return ref
}

// CopyImage copies ref from the daemon at from to the daemon at to, as
// `docker -H from save ref | docker -H to load` does (a test daemon starts
// with an empty image store and no registry is reachable).
func CopyImage(t testing.TB, ref, from, to string) {
	t.Helper()
	src, err := client.New(client.WithHost(from))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := client.New(client.WithHost(to))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := dst.ImageInspect(ctx, ref); err == nil {
		return
	}
	rc, err := src.ImageSave(ctx, []string{ref})
	if err != nil {
		t.Fatalf("save %s from %s: %v", ref, from, err)
	}
	defer rc.Close()
	res, err := dst.ImageLoad(ctx, rc, client.ImageLoadWithQuiet(true))
	if err != nil {
		t.Fatalf("load %s into %s: %v", ref, to, err)
	}
	var out bytes.Buffer
	out.ReadFrom(res)
	res.Close()
	if _, err := dst.ImageInspect(ctx, ref); err != nil {
		t.Fatalf("load %s into %s: %v\n%s", ref, to, err, out.String())
	}
}
