//go:build integration

package k8s

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/backend/backendtest"
	"github.com/xrun-dev/xrun/client/backend/kube"
	"github.com/xrun-dev/xrun/client/buildctx"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/spec"
)

// standIn stands in for xrun-runner in the conformance suite's image: it
// runs the suite's script (XRUN_CONFORMANCE_SCRIPT) with its output
// directory in OUT, passes a SIGTERM on to it, and when it ends writes
// that directory into its log as the runner does (contract.WriteOut's
// frame: a gzipped tar of out/..., base64 in lines after the prefix,
// between a begin line with its size and an end line with its SHA-256),
// which is how a cluster's job brings its output back. A script that
// wrote nothing leaves no frame.
const standIn = `#!/bin/sh
OUT=` + contract.OutDir + `
export OUT
frame() {
	[ -n "$(ls -A "$OUT" 2>/dev/null)" ] || return 0
	tar -czf /tmp/out.tgz -C "$(dirname "$OUT")" "$(basename "$OUT")"
	echo "` + contract.OutPrefix + ` begin $(stat -c %s /tmp/out.tgz)"
	base64 -w 96 /tmp/out.tgz | sed 's/^/` + contract.OutPrefix + ` /'
	echo "` + contract.OutPrefix + ` end $(sha256sum /tmp/out.tgz | cut -d' ' -f1)"
}
sh -c "$XRUN_CONFORMANCE_SCRIPT" &
child=$!
trap 'kill -TERM $child' TERM
wait $child
rc=$?
# A trapped signal ends the first wait early: wait for the script's own end.
while kill -0 $child 2>/dev/null; do wait $child; rc=$?; done
frame
exit $rc
`

// The conformance suite (client/backend/backendtest) against the test
// cluster, through the Kubernetes backend as a submit uses it: an image
// built on this machine's Docker host, the code pushed on top of it to
// the cluster's registry.
func TestConformance(t *testing.T) {
	ctx := context.Background()
	tag := "xrun/e2e-conformance:" + fmt.Sprint(time.Now().UnixNano())
	df := fmt.Sprintf("FROM %s\nCOPY stand-in /usr/local/bin/xrun-stand-in\nRUN mkdir -p %s && chmod 1777 %s\nLABEL dev.xrun.test=k8s\nENTRYPOINT [\"/usr/local/bin/xrun-stand-in\"]\n",
		Base, contract.OutDir, contract.OutDir)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name, body string
		mode       int64
	}{{"Dockerfile", df, 0o644}, {"stand-in", standIn, 0o755}} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body))})
		tw.Write([]byte(f.body))
	}
	tw.Close()
	if _, err := eng.Build(ctx, &buf, engine.BuildOptions{Tag: tag}, nil); err != nil {
		t.Fatalf("build the stand-in's image: %v", err)
	}
	t.Cleanup(func() { eng.RemoveImage(context.Background(), tag) })

	exp := t.TempDir()
	if err := os.WriteFile(filepath.Join(exp, "experiment.py"), []byte("pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, err := buildctx.Collect(exp, &spec.Spec{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := kube.Connect(ctx, kube.Selection{Kubeconfig: kubeconfig, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	b.Log = &log
	backendtest.Run(t, backendtest.Place{Backend: b, Capabilities: kube.Capabilities, Timeout: 3 * time.Minute,
		Spec: func(t *testing.T, j *store.Job, script string) backend.Spec {
			return backend.Spec{Name: "xrun-conformance-" + j.ID, Image: tag, Code: code,
				Env:    []string{"XRUN_CONFORMANCE_SCRIPT=" + script},
				Labels: map[string]string{contract.LabelJob: j.ID, "dev.xrun.test": "k8s"},
				Push:   &backend.Push{Builder: eng, Registry: registry}}
		}})
	if t.Failed() {
		t.Logf("the backend's log:\n%s", log.String())
	}
}
