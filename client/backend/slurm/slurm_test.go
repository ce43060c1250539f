package slurm

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
)

func TestStateOf(t *testing.T) {
	for _, c := range []struct {
		name      string
		p         probe
		submitted bool
		phase     backend.Phase
		waiting   bool
		code      int
		timedOut  bool
		message   string
	}{
		{"before sbatch", probe{}, false, backend.Pending, false, 0, false, ""},
		{"pending", probe{queue: "PENDING|Resources"}, true, backend.Pending, true, 0, false, "Resources"},
		{"requeued", probe{queue: "REQUEUED|None", started: 1}, true, backend.Pending, true, 0, false, "Slurm requeued it (its node went down, or it was preempted): it runs again from the start once it gets a node"},
		{"pending again after its node went down", probe{queue: "PENDING|BeginTime", started: 1}, true, backend.Pending, true, 0, false, "Slurm requeued it (its node went down, or it was preempted): it runs again from the start once it gets a node (BeginTime)"},
		{"running", probe{queue: "RUNNING|None", started: 1}, true, backend.Running, false, 0, false, ""},
		{"runner exited, batch completing", probe{queue: "COMPLETING|None", exit: "2", started: 1}, true, backend.Exited, false, 2, false, ""},
		{"completed", probe{queue: "COMPLETED|None", exit: "0", started: 1}, true, backend.Exited, false, 0, false, ""},
		{"purged from the queue", probe{exit: "1", started: 1}, true, backend.Exited, false, 1, false, ""},
		{"time limit, runner wrote its code", probe{queue: "TIMEOUT|TimeLimit", exit: "130", started: 1}, true, backend.Exited, false, 130, true, ended["TIMEOUT"]},
		{"time limit, killed", probe{queue: "TIMEOUT|TimeLimit", started: 1}, true, backend.Exited, false, 124, true, ended["TIMEOUT"]},
		{"node failure", probe{queue: "NODE_FAIL|None", started: 1}, true, backend.Exited, false, -1, false, ended["NODE_FAIL"]},
		{"preempted", probe{queue: "PREEMPTED|None", started: 1}, true, backend.Exited, false, -1, false, ended["PREEMPTED"]},
		{"deadline", probe{queue: "DEADLINE|None"}, true, backend.Exited, false, 124, true, "no node took it within its pending limit (--pending-limit): Slurm dropped it while it waited for a node"},
		{"deadline with a reason", probe{queue: "DEADLINE|ReqNodeNotAvail"}, true, backend.Exited, false, 124, true, "no node took it within its pending limit (--pending-limit): Slurm dropped it while it waited for a node (ReqNodeNotAvail)"},
		{"gone without a code", probe{started: 1}, true, backend.Exited, false, -1, false, "Slurm no longer lists the job and its runner left no exit code (its node failed, or it was killed)"},
		{"cancelled while it waited", probe{queue: "CANCELLED|None"}, true, backend.Exited, false, 143, false, ended["CANCELLED"]},
	} {
		s := stateOf(c.p, c.submitted, "1m")
		if s.Phase != c.phase || s.Waiting != c.waiting || s.ExitCode != c.code || s.TimedOut != c.timedOut || s.Message != c.message {
			t.Errorf("%s: got %+v", c.name, s)
		}
		if s.Enforced || s.Timeout != "1m" {
			t.Errorf("%s: a client that watches stops the job at its timeout: %+v", c.name, s)
		}
	}
}

func TestTimeLimit(t *testing.T) {
	for in, want := range map[time.Duration]string{0: "", 20 * time.Second: "0:20", 90 * time.Second: "1:30", 1500 * time.Millisecond: "0:02", 2 * time.Hour: "120:00"} {
		if got := timeLimit(in); got != want {
			t.Errorf("timeLimit(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestDirectives(t *testing.T) {
	spec := backend.Spec{Name: "xrun-e-1", GPUs: &backend.GPUs{Count: 2}, GPUType: "h100", Timeout: time.Minute, MemoryBytes: 3<<20 + 1, CPUs: 4}
	got, err := directives(Settings{Partition: "gpu", Account: "lab", QOS: "normal", Constraint: "h100&ib"}, spec, "/home/u/.xrun/slurm/1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--job-name=xrun-e-1", "--output=/home/u/.xrun/slurm/1/log", "--open-mode=append", "--chdir=/home/u/.xrun/slurm/1",
		"--partition=gpu", "--account=lab", "--qos=normal", "--constraint=h100&ib", "--time=1:00", "--deadline=now+86460", "--gres=gpu:h100:2", "--mem=4M", "--cpus-per-task=4"}
	if strings.Join(got, "\n") != "#SBATCH "+strings.Join(want, "\n#SBATCH ") {
		t.Errorf("directives:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A pending limit of its own, and none without a timeout: such a
	// job waits as long as it takes.
	spec.PendingLimit = 2 * time.Minute
	if got, _ := directives(Settings{}, spec, "/d/1"); !slices.Contains(got, "#SBATCH --deadline=now+180") {
		t.Errorf("a 2m pending limit with a 1m timeout: %q", got)
	}
	spec.Timeout = 0
	if got, _ := directives(Settings{}, spec, "/d/1"); strings.Contains(strings.Join(got, " "), "deadline") {
		t.Errorf("no timeout: %q", got)
	}
	// sbatch would split a value with white space into another option.
	if _, err := directives(Settings{Partition: "gpu --uid=0"}, spec, "/d/1"); err == nil || !strings.Contains(err.Error(), "--partition") {
		t.Errorf("a partition with a space: %v", err)
	}
}

func TestSbatchReason(t *testing.T) {
	got := sbatchReason("sbatch: error: Batch job submission failed: Requested node configuration is not available\n")
	if got != "Requested node configuration is not available" {
		t.Errorf("reason %q", got)
	}
	// sbatch --test-only's own words.
	if got := sbatchReason("allocation failure: Requested node configuration is not available\n"); got != "Requested node configuration is not available" {
		t.Errorf("test-only reason %q", got)
	}
}

// TestJobScript runs the batch script with sh, a stand-in runner in place
// of the real one: the runner's exit code is recorded, the environment
// is quoted, and a SIGTERM to the script (scancel, the time limit) reaches
// the runner, whose own exit code is the one kept.
func TestJobScript(t *testing.T) {
	d := t.TempDir()
	runner := filepath.Join(d, "runner")
	os.WriteFile(runner, []byte(`#!/bin/sh
printf '%s\n' "$WEIRD" > "$(dirname "$2")/weird"
trap 'echo got TERM; exit 7' TERM
echo started > "$(dirname "$2")/runner-started"
if [ "$SLEEP" = 1 ]; then sleep 30 & wait; fi
exit 3
`), 0o755)
	run := func(env []string, term bool) (string, string) {
		script := jobScript(nil, d, runner, env)
		cmd := exec.Command("sh", "-c", script)
		out, err := os.Create(filepath.Join(d, "log"))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if term {
			for i := 0; i < 100; i++ {
				if _, err := os.Stat(filepath.Join(d, "runner-started")); err == nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGTERM)
		}
		cmd.Wait()
		code, _ := os.ReadFile(filepath.Join(d, exitFile))
		log, _ := os.ReadFile(filepath.Join(d, "log"))
		os.Remove(filepath.Join(d, "runner-started"))
		return strings.TrimSpace(string(code)), string(log)
	}
	weird := `it's "$HOME" $(id) ` + "`x`"
	code, log := run([]string{"WEIRD=" + weird, "1BAD=x", "SLEEP=0"}, false)
	if code != "3" {
		t.Errorf("exit file %q; log:\n%s", code, log)
	}
	if got, _ := os.ReadFile(filepath.Join(d, "weird")); strings.TrimSpace(string(got)) != weird {
		t.Errorf("the value reached the runner as %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(d, startedFile)); err != nil || len(strings.TrimSpace(string(b))) < 9 {
		t.Errorf("started: %q %v", b, err)
	}
	code, log = run([]string{"SLEEP=1"}, true)
	if code != "7" || !strings.Contains(log, "got TERM") {
		t.Errorf("after SIGTERM: exit file %q; log:\n%s", code, log)
	}
}

// TestSSHShellQuotes runs scripts through a stand-in ssh that hands its
// last argument to sh, as the login node's shell does: what the script
// says arrives intact, and ssh's own failure (255) is an unreachable
// cluster.
func TestSSHShellQuotes(t *testing.T) {
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "ssh"), []byte(`#!/bin/sh
for a; do last="$a"; done
case "$*" in *" -p 2222 "*) ;; *) [ "$FAKE_SSH_PORT" ] && exit 9 ;; esac
[ "$FAKE_SSH_DOWN" = 1 ] && { echo "ssh: connect to host login port 22: Connection refused" >&2; exit 255; }
exec sh -c "$last"
`), 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	sh := SSHShell{Login: "ssh://me@login:2222"}
	out, err := sh.Run(context.Background(), `printf '%s|' "it's" "a \"b\"" '$HOME'; cat`, strings.NewReader("in"))
	if err != nil || string(out) != `it's|a "b"|$HOME|in` {
		t.Errorf("got %q %v", out, err)
	}
	if _, err := sh.Run(context.Background(), "echo no >&2; exit 4", nil); !errors.As(err, new(*ExitError)) || err.Error() != "no" {
		t.Errorf("a failing script: %v", err)
	}
	t.Setenv("FAKE_SSH_DOWN", "1")
	_, err = sh.Run(context.Background(), "true", nil)
	if !errors.Is(err, backend.ErrUnreachable) || !strings.HasPrefix(err.Error(), "ssh to me@login:2222 failed: connect to host login port 22: Connection refused; check that `ssh -p 2222 me@login true` works") {
		t.Errorf("ssh down: %v", err)
	}
	if err := sshError("login1", "Host key verification failed."); !strings.Contains(err.Error(), "ssh to login1 once by hand") {
		t.Errorf("host key: %v", err)
	}
	if sh.Where() != "me@login:2222" || Ref("ssh://me@login:2222") != "slurm://me@login:2222" {
		t.Errorf("where %q ref %q", sh.Where(), Ref("ssh://me@login:2222"))
	}
}

func TestRefs(t *testing.T) {
	if login, machine := ParseRef(Ref("")); login != "" || machine != backend.ThisHost() {
		t.Errorf("this machine's ref parses to %q %q", login, machine)
	}
	if login, machine := ParseRef("slurm://u@login1"); login != "u@login1" || machine != "" {
		t.Errorf("login ref parses to %q %q", login, machine)
	}
	if !IsRef("slurm://x") || !IsRef("slurm+local://x") || IsRef("ssh://x") {
		t.Error("IsRef")
	}
}

func TestPartitionLimit(t *testing.T) {
	sinfo := "debug* infinite\nshort 5:00\nlong 2-00:00:00\nmid 12:00:00\n"
	for _, c := range []struct {
		part, name string
		limit      time.Duration
	}{{"", "debug", 0}, {"short", "short", 5 * time.Minute}, {"long", "long", 48 * time.Hour}, {"mid", "mid", 12 * time.Hour}} {
		name, limit, ok := partitionLimit(sinfo, c.part)
		if !ok || name != c.name || limit != c.limit {
			t.Errorf("%q: %q %s %v", c.part, name, limit, ok)
		}
	}
	if _, _, ok := partitionLimit(sinfo, "gpu"); ok {
		t.Error("an unknown partition has a limit")
	}
	for in, want := range map[string]time.Duration{"30": 30 * time.Minute, "1-12": 36 * time.Hour, "1-2:30": 26*time.Hour + 30*time.Minute} {
		if got, ok := parseSlurmTime(in); !ok || got != want {
			t.Errorf("parseSlurmTime(%q) = %s %v", in, got, ok)
		}
	}
}

// The control sockets of shared ssh connections go in a directory of this
// user's alone: one that others may write to is not used.
func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	d := privateDir("xrun-ssh", "", "relative", base)
	if d != filepath.Join(base, "xrun-ssh") {
		t.Fatalf("privateDir = %q", d)
	}
	if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("made %v, %v; want mode 0700", fi.Mode(), err)
	}
	if again := privateDir("xrun-ssh", base); again != d {
		t.Errorf("the directory again: %q", again)
	}
	os.Chmod(d, 0o777)
	if got := privateDir("xrun-ssh", base); got != "" {
		t.Errorf("a directory others may write to: %q, want none", got)
	}
	os.Remove(d)
	os.Symlink(t.TempDir(), d)
	if got := privateDir("xrun-ssh", base); got != "" {
		t.Errorf("a symbolic link: %q, want none", got)
	}
	long := filepath.Join(base, strings.Repeat("x", 80))
	os.Mkdir(long, 0o700)
	if got := privateDir("xrun-ssh", long); got != "" {
		t.Errorf("a path a socket's does not fit in: %q", got)
	}
}

// sbatch's own words on an option it cannot take, as sbatch 22 writes
// them; a refusal of the cluster's is not one.
func TestBadOption(t *testing.T) {
	for stderr, want := range map[string]string{
		"sbatch: unrecognized option '--no-such-option'\nTry \"sbatch --help\" for more information\n": "sbatch: unrecognized option '--no-such-option'",
		"sbatch: error: Invalid --exclusive specification\n":                                           "Invalid --exclusive specification",
		"Invalid time specification (pos=0): garbage\nsbatch: error: Invalid --begin specification\n":  "Invalid --begin specification",
		"allocation failure: Requested node configuration is not available\n":                          "",
	} {
		if got := badOption(stderr); got != want {
			t.Errorf("badOption(%q) = %q, want %q", stderr, got, want)
		}
	}
}

func TestCheckExtra(t *testing.T) {
	for o, want := range map[string]string{
		"--exclusive": "", "--nodelist=n1,n2": "", "--comment=nightly": "", "-w": "", "--signal=B:USR1@60": "",
		"--time=5":            "xrun sets --time itself (give --timeout or resources.timeout)",
		"-t5":                 "xrun sets --time itself",
		"-c4":                 "xrun sets --cpus-per-task itself (give --cpus or resources.cpus)",
		"--output=/tmp/x":     "xrun sets --output itself",
		"--gres=gpu:2":        "xrun sets --gres itself",
		"--exclusive --uid=0": "give one option",
		"exclusive":           "give an sbatch option",
		"--":                  "give an sbatch option",
		"--comment='a b'":     "give one option",
	} {
		err := checkExtra(o)
		if (err == nil) != (want == "") || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("checkExtra(%q) = %v, want %q", o, err, want)
		}
	}
	spec := backend.Spec{Name: "xrun-e-1", Timeout: time.Minute}
	got, err := directives(Settings{Sbatch: []string{"--exclusive", "--nodelist=n1,n2"}}, spec, "/d/1")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got); n < 2 || got[n-2] != "#SBATCH --exclusive" || got[n-1] != "#SBATCH --nodelist=n1,n2" {
		t.Errorf("the extra options are not last: %q", got)
	}
}

// A GPU type no node has is the cluster's refusal, not a bad option.
func TestBadOptionNotGres(t *testing.T) {
	if got := badOption("sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification\n"); got != "" {
		t.Errorf("an unknown gres read as a bad option: %q", got)
	}
}

// archivesByName is b's Archives, and the same by name.
func archivesByName(t *testing.T, b *Backend) ([]backend.Archive, map[string]backend.Archive) {
	t.Helper()
	list, err := b.Archives(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]backend.Archive{}
	for _, a := range list {
		byName[a.Name] = a
	}
	return list, byName
}

// Archives says which image archives a job that has not ended loads, and
// lists a half-written copy; RemoveArchive removes one, and nothing else.
func TestArchives(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string, age time.Duration) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		os.Chtimes(p, at, at)
	}
	write("images/xrun_a_1.tar", "aaaa", time.Hour)
	write("images/xrun_b_2.tar", "bb", 2*time.Hour)
	write("images/xrun_c_3.tar.4242", "c", 3*time.Hour)
	write("000000000001/job.sh", "docker load -i '"+root+"/images/xrun_a_1.tar'\n", 0)
	write("000000000002/job.sh", "docker load -i '"+root+"/images/xrun_b_2.tar'\n", 0)
	write("000000000002/exit", "0\n", 0)
	b := &Backend{Shell: LocalShell{}, Settings: Settings{Dir: root}}
	list, got := archivesByName(t, b)
	if a := got["xrun_a_1.tar"]; !a.InUse || a.Bytes != 4 || time.Since(a.Modified) < 59*time.Minute {
		t.Errorf("the archive of a running job: %+v", a)
	}
	if a := got["xrun_b_2.tar"]; a.InUse || a.Bytes != 2 {
		t.Errorf("the archive of an ended job: %+v", a)
	}
	if a, ok := got["xrun_c_3.tar.4242"]; !ok || a.InUse {
		t.Errorf("a half-written copy: %+v (listed %v)", a, ok)
	}
	if len(list) != 3 {
		t.Errorf("listed %+v", list)
	}
	if err := b.RemoveArchive(context.Background(), "xrun_b_2.tar"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "images", "xrun_b_2.tar")); !os.IsNotExist(err) {
		t.Errorf("still there: %v", err)
	}
	for _, bad := range []string{"../000000000001/job.sh", "", "job.sh"} {
		if err := b.RemoveArchive(context.Background(), bad); err == nil {
			t.Errorf("RemoveArchive(%q) took it", bad)
		}
	}
	if empty, err := (&Backend{Shell: LocalShell{}, Settings: Settings{Dir: filepath.Join(root, "none")}}).Archives(context.Background()); err != nil || len(empty) != 0 {
		t.Errorf("no images directory: %+v, %v", empty, err)
	}
}

// saveArchive is a docker save archive as Docker 20.10 writes one: each
// layer a directory with its layer.tar, the configuration and manifest
// beside them.
func saveArchive(t *testing.T, files map[string][]byte) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if dir := path.Dir(name); dir != "." {
			tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755})
		}
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[name]))})
		tw.Write(files[name])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// unpackLoaded is what a job's script hands docker load for the image
// directory dir (tar -h), as name to contents.
func unpackLoaded(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out, err := exec.Command("tar", "-chf", "-", "-C", dir, ".").Output()
	if err != nil {
		t.Fatalf("tar -ch of %s: %v", dir, err)
	}
	got := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			data, _ := io.ReadAll(tr)
			got[path.Clean(h.Name)] = data
		}
	}
	return got
}

// Two images on one base: the second sends only the layer the first
// lacks, each loads back whole through its links, and removing the first
// frees its own layer and keeps the shared one.
func TestSendImageSharesLayers(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "images", blobsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	layer := func(seed byte, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = seed + byte(i*7)
		}
		return b
	}
	base, a, b2 := layer(1, 300<<10), layer(2, 100<<10), layer(3, 200<<10)
	imgA := map[string][]byte{"manifest.json": []byte(`[{"Config":"ca.json"}]`), "ca.json": []byte("{}"), "l1/layer.tar": base, "l2/layer.tar": a, "l1/VERSION": []byte("1.0")}
	imgB := map[string][]byte{"manifest.json": []byte(`[{"Config":"cb.json"}]`), "cb.json": []byte("{}"), "l1/layer.tar": base, "l3/layer.tar": b2, "l1/VERSION": []byte("1.0")}
	be := &Backend{Shell: LocalShell{}, Settings: Settings{Dir: root}}
	have := map[string]bool{}
	kept, err := be.sendImage(context.Background(), saveArchive(t, imgA), root, "xrun/a:1", have)
	if err != nil || kept != 0 || len(have) != 2 {
		t.Fatalf("the first image: kept %d, blobs %v, %v", kept, have, err)
	}
	kept, err = be.sendImage(context.Background(), saveArchive(t, imgB), root, "xrun/b:2", have)
	if err != nil || kept != int64(len(base)) {
		t.Fatalf("the second image kept %d bytes, want the base's %d: %v", kept, len(base), err)
	}
	blobs, _ := os.ReadDir(filepath.Join(root, "images", blobsDir))
	if len(blobs) != 3 {
		t.Errorf("blobs %v, want the three layers once", blobs)
	}
	for ref, want := range map[string]map[string][]byte{"xrun_a_1": imgA, "xrun_b_2": imgB} {
		got := unpackLoaded(t, filepath.Join(root, "images", ref))
		if len(got) != len(want) {
			t.Errorf("%s loads %d files, want %d", ref, len(got), len(want))
		}
		for name, data := range want {
			if !bytes.Equal(got[name], data) {
				t.Errorf("%s: %s differs from the saved archive's", ref, name)
			}
		}
	}
	// A killed submit's blob, linked by no image.
	orphan := filepath.Join(root, "images", blobsDir, strings.Repeat("e", 64)+".123")
	os.WriteFile(orphan, []byte("x"), 0o644)
	list, got := archivesByName(t, be)
	if len(list) != 3 || got["xrun_a_1"].Bytes < int64(len(a)) || got["xrun_a_1"].Bytes >= int64(len(a)+len(base)) ||
		got["xrun_b_2"].Bytes < int64(len(b2)) || got[blobsDir+"/"+filepath.Base(orphan)].Bytes != 1 {
		t.Errorf("listed %+v: each image's own layer counts, the shared one does not", list)
	}
	if err := be.RemoveArchive(context.Background(), "xrun_a_1"); err != nil {
		t.Fatal(err)
	}
	if blobs, _ := os.ReadDir(filepath.Join(root, "images", blobsDir)); len(blobs) != 3 {
		t.Errorf("after removing xrun_a_1: blobs %v, want the base's, b's and the orphan", blobs)
	}
	if got := unpackLoaded(t, filepath.Join(root, "images", "xrun_b_2")); !bytes.Equal(got["l1/layer.tar"], base) {
		t.Error("the image left lost its shared layer")
	}
	if err := be.RemoveArchive(context.Background(), blobsDir+"/"+filepath.Base(orphan)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("the orphan blob is still there: %v", err)
	}
}

// A command killed before it exited (the deadline of a look) is not the
// script's answer: never an ExitError, which CopyOut would read as a job
// that wrote no output, but a host that did not answer in time.
func TestKilledCommandIsNoExit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := run(exec.CommandContext(ctx, "sh", "-c", "sleep 10"), nil, "login.lab")
	var ee *ExitError
	if errors.As(err, &ee) || !errors.Is(err, backend.ErrUnreachable) || !strings.Contains(err.Error(), "ssh to login.lab was stopped before it finished") {
		t.Errorf("killed: %v (%T)", err, err)
	}
	_, err = run(exec.Command("sh", "-c", "exit 1"), nil, "login.lab")
	if !errors.As(err, &ee) || ee.Code != 1 {
		t.Errorf("exit 1: %v (%T)", err, err)
	}
}
