//go:build integration

package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/internal/testenv"
)

// The server's manifests (images/server/kubernetes.yaml) on the test
// cluster as a team would apply them: xrun serve in a Deployment on the
// PostgreSQL its Secret names, behind its Service. A job of submit --k8s
// posts its results to the Service's address, and they are read back
// through it.
func TestServerManifests(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	repo := xruntest.Repo()

	// The team's PostgreSQL, reached by the pods on this machine's pod
	// bridge, and the tokens an admin makes on it (kubectl exec of
	// `xrun serve token add` in the pod does the same).
	db := testenv.PostgresOn(t, podGateway) + "postgres?sslmode=disable"
	token := func(name, scope string) string {
		r := x.Run(t, time.Minute, "serve", "token", "add", "--db", db, "--scope", scope, name)
		expect(t, r, 0)
		return strings.TrimSpace(r.Stdout)
	}
	post, read := token("runners", "post"), token("reader", "read")

	// The server's image, in the registry the cluster pulls from.
	image := registry + "/xrun/server:e2e"
	for _, c := range [][]string{
		{"bash", filepath.Join(repo, "scripts", "server-image.sh"), image},
		{"docker", "push", "-q", image},
	} {
		cmd := exec.CommandContext(ctx, c[0], c[1:]...)
		cmd.Env = append(os.Environ(), "XRUN_BIN="+x.Bin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", image).Run() })

	// The manifests as the file has them, but for the image's name.
	data, err := os.ReadFile(filepath.Join(repo, "images", "server", "kubernetes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var dep *appsv1.Deployment
	var svc *corev1.Service
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("images/server/kubernetes.yaml: %v", err)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			dep = o
		case *corev1.Service:
			svc = o
		default:
			t.Fatalf("images/server/kubernetes.yaml: an unexpected %T", obj)
		}
	}
	if dep == nil || svc == nil {
		t.Fatal("images/server/kubernetes.yaml: no Deployment or no Service")
	}
	dep.Spec.Template.Spec.Containers[0].Image = image
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "xrun-server-db"},
		StringData: map[string]string{"url": strings.Replace(db, "127.0.0.1", podGateway, 1)}}
	ns := "default"
	if _, err := kc.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if dep, err = kc.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if svc, err = kc.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		fg := metav1.DeletePropagationForeground
		kc.AppsV1().Deployments(ns).Delete(bg, dep.Name, metav1.DeleteOptions{PropagationPolicy: &fg})
		kc.CoreV1().Services(ns).Delete(bg, svc.Name, metav1.DeleteOptions{})
		kc.CoreV1().Secrets(ns).Delete(bg, secret.Name, metav1.DeleteOptions{})
	})
	until(t, 3*time.Minute, "the server's Deployment available", func() bool {
		d, err := kc.AppsV1().Deployments(ns).Get(ctx, dep.Name, metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 1
	})
	base := fmt.Sprintf("http://%s:%d", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
	t.Logf("the server's Service: %s", base)

	// A job posts to the Service's address, given as the config's server.
	cfgDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cfgDir, "xrun"), 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"post-token": post + "\n", "config.yaml": "server:\n  url: " + base + "\n  token_file: post-token\n"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(cfgDir, "xrun", name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := x.RunEnv(t, 5*time.Minute, []string{"XDG_CONFIG_HOME=" + cfgDir, "XRUN_POST_URL=", "XRUN_POST_TOKEN="},
		"submit", "--k8s", "--base", Base, "--label", "dev.xrun.test=k8s", "--cpu", "--json", fixtureDir("quick"))
	expect(t, r, 0)
	id := xruntest.JobID(t, r)
	defer x.Run(t, time.Minute, "rm", id)

	// Read back through the Service, with the read token.
	defer func() {
		if t.Failed() {
			logs := x.Run(t, time.Minute, "logs", id)
			t.Logf("the submit said:\n%s\nthe job's log:\n%s%s", r.Stderr, logs.Stdout, logs.Stderr)
		}
	}()
	var runs []history.Run
	until(t, time.Minute, "the job's run on the server", func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/runs", nil)
		req.Header.Set("Authorization", "Bearer "+read)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Logf("GET %s/api/v1/runs: %v", base, err)
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		runs = runs[:0]
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &runs) != nil {
			t.Logf("GET %s/api/v1/runs: %d %s", base, resp.StatusCode, body)
			return false
		}
		for _, run := range runs {
			if run.JobID == id {
				return run.Source == "post:runners"
			}
		}
		t.Logf("GET %s/api/v1/runs: %d runs, none of job %s", base, len(runs), id)
		return false
	})
}
