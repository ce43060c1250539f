//go:build integration

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/backend/dockerhost"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/testenv"
)

// A shared GPU box: one owner's job, file or command cannot hurt
// another's (issue 33). These tests run on a Docker daemon of their own
// (prune removes things), and run xrun as a second Unix user, otherUser,
// beside the suite's own (root).

// otherUser is the Unix user of the other owner, made when missing.
const otherUser = "xrun-other"

// other is otherUser, with what it needs to run xrun: a copy of the
// binary it may execute and a home of its own.
type other struct {
	uid, gid uint32
	bin      string
	home     string
}

// asOther makes otherUser (useradd, as root) when missing and gives it
// a copy of xrun and a home.
func asOther(t *testing.T) *other {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("the owners tests run xrun as a second user, %s: they need root", otherUser)
	}
	u, err := user.Lookup(otherUser)
	if err != nil {
		if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", otherUser).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v: %s", otherUser, err, out)
		}
		if u, err = user.Lookup(otherUser); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir, err := os.MkdirTemp("", "xrun-other-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	o := &other{uid: uint32(uid), gid: uint32(gid), bin: filepath.Join(dir, "xrun"), home: filepath.Join(dir, "home")}
	b, err := os.ReadFile(xrunBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(o.bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(o.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(o.home, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return o
}

// run runs xrun as otherUser.
func (o *other) run(t *testing.T, limit time.Duration, args ...string) res {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.bin, args...)
	cmd.Dir = o.home
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + o.home, "USER=" + otherUser, "XDG_DATA_HOME=" + filepath.Join(o.home, "data"),
		"XRUN_HOST=", "XRUN_CONTEXT=", "XRUN_NO_STANDBY=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: o.uid, Gid: o.gid}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := res{Stdout: stdout.String(), Stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.Code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("xrun %v as %s: %v\n%s", args, otherUser, err, stderr.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("xrun %v as %s ran past %s", args, otherUser, limit)
	}
	return r
}

// sharedDaemon starts a test daemon that otherUser may use too, as every
// user of a shared box may use its daemon, and returns it with an engine
// on it and its busybox image.
func sharedDaemon(t *testing.T) (*testenv.Daemon, engine.Engine, string) {
	t.Helper()
	d := testenv.StartDaemon(t)
	bb := testenv.EnsureBusybox(t, d.Socket)
	sock := strings.TrimPrefix(d.Socket, "unix://")
	if err := os.Chmod(filepath.Dir(sock), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	cli, err := connect.NewClient(connect.DockerHost{Host: d.Socket})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.FromClient(d.Socket, cli)
	t.Cleanup(func() { e.Close() })
	return d, e, bb
}

// makeStandby makes a running standby container of experiment and
// owner, as an attached submit leaves one (a busybox that sleeps), and
// returns its job id; "" when a prune removed it before it started (as
// dockerhost.MakeStandby allows).
func makeStandby(t *testing.T, e engine.Engine, bb, experiment, owner string) string {
	t.Helper()
	ctx := context.Background()
	id := randomHex(t)
	labels := map[string]string{contract.LabelStandby: "key", contract.LabelJob: id, contract.LabelExperiment: experiment,
		contract.LabelOwner: owner, "dev.xrun.standby-until": time.Now().Add(15 * time.Minute).UTC().Format(time.RFC3339)}
	cid, err := e.Create(ctx, engine.ContainerSpec{Name: "xrun-" + experiment + "-" + id + contract.StandbySuffix, Image: bb, Cmd: []string{"sleep", "900"}, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, cid); err != nil {
		if _, gone := e.Inspect(ctx, cid); gone != nil || strings.Contains(err.Error(), "marked for removal") {
			return ""
		}
		t.Fatal(err)
	}
	return id
}

// Prune on a shared host removes the caller's standbys, job images and
// compile caches alone, and names each (dry run or not); another user's
// stay, even with --older-than 0, unless --all-users.
func TestHostileOwnersPruneSparesOtherUsers(t *testing.T) {
	d, e, bb := sharedDaemon(t)
	o := asOther(t)
	ctx := context.Background()
	me := store.CurrentUser()
	type objs struct{ image, standby, volume string }
	made := map[string]objs{}
	for _, owner := range []string{me, otherUser} {
		tag := "xrun/e2e-owners:" + randomHex(t)
		df := fmt.Sprintf("FROM %s\nLABEL %s=e2e-owners %s=%s\n", bb, contract.LabelExperiment, contract.LabelOwner, owner)
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df))})
		tw.Write([]byte(df))
		tw.Close()
		if _, err := e.Build(ctx, &buf, engine.BuildOptions{Tag: tag}, nil); err != nil {
			t.Fatal(err)
		}
		id := makeStandby(t, e, bb, "e2e-owners", owner)
		if id == "" {
			t.Fatal("the standby is gone")
		}
		vol := "xrun-cache-e2e-owners-" + randomHex(t)
		cid, err := e.Create(ctx, engine.ContainerSpec{Name: "mkvol-" + vol, Image: bb, Cmd: []string{"true"},
			Mounts: []engine.Mount{{Volume: vol, Target: "/c", Labels: map[string]string{contract.LabelCache: "1", contract.LabelExperiment: "e2e-owners", contract.LabelOwner: owner}}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Remove(ctx, cid, true); err != nil {
			t.Fatal(err)
		}
		made[owner] = objs{tag, "xrun-e2e-owners-" + id + contract.StandbySuffix, vol}
	}
	names := func(r res, owner string, want bool) {
		t.Helper()
		for _, n := range []string{made[owner].image, made[owner].standby, made[owner].volume} {
			if strings.Contains(r.Stdout, n) != want {
				t.Errorf("prune says of %s's %s: %v, want %v:\n%s\n%s", owner, n, !want, want, r.Stdout, r.Stderr)
			}
		}
	}
	args := []string{"prune", "--host", d.Socket, "--older-than", "0", "--caches"}

	dry := x.Run(t, time.Minute, append(args, "--dry-run")...)
	expect(t, dry, 0, "of other users or of none (--all-users")
	names(dry, me, true)
	names(dry, otherUser, false)
	theirs := o.run(t, time.Minute, append(args, "--dry-run")...)
	expect(t, theirs, 0)
	names(theirs, otherUser, true)
	names(theirs, me, false)
	all := x.Run(t, time.Minute, append(args, "--dry-run", "--all-users")...)
	expect(t, all, 0)
	names(all, me, true)
	names(all, otherUser, true)

	p := x.Run(t, time.Minute, args...)
	expect(t, p, 0)
	names(p, me, true)
	names(p, otherUser, false)
	there := func(owner string) (image, standby, volume bool) {
		image, _ = e.ImageExists(ctx, made[owner].image)
		if cs, err := e.List(ctx, map[string]string{contract.LabelOwner: owner, contract.LabelStandby: ""}, true); err == nil {
			standby = len(cs) > 0
		}
		if vs, err := e.Volumes(ctx, map[string]string{contract.LabelOwner: owner, contract.LabelCache: ""}); err == nil {
			volume = len(vs) > 0
		}
		return
	}
	if i, s, v := there(me); i || s || v {
		t.Errorf("prune left mine: image %v, standby %v, cache %v", i, s, v)
	}
	if i, s, v := there(otherUser); !i || !s || !v {
		t.Errorf("prune removed %s's: image kept %v, standby kept %v, cache kept %v", otherUser, i, s, v)
	}
}

// A loop of prunes beside submits that claim standbys: a claimed standby,
// not yet handed its job (the submit assigns GPUs and makes its spec in
// between), and the job's container once handed, are never removed.
func TestHostileOwnersPruneBesideClaims(t *testing.T) {
	d, e, bb := sharedDaemon(t)
	ctx := context.Background()
	me := store.CurrentUser()
	b := dockerhost.New(e)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	prunes := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			cmd := exec.Command(xrunBin, "prune", "--host", d.Socket)
			cmd.Env = env()
			cmd.Run()
			prunes++
			// Now and then a standby waits long enough to be claimed.
			time.Sleep(time.Duration(200+rand.IntN(800)) * time.Millisecond)
		}
	}()
	claimed, lost := 0, 0
	for round := 0; round < 16; round++ {
		if makeStandby(t, e, bb, "e2e-race", me) == "" {
			continue
		}
		st := b.ClaimStandby(ctx, "e2e-race", me)
		if st == nil {
			continue // a prune took it while it waited: that is the prune's
		}
		claimed++
		name := "xrun-e2e-race-" + st.JobID
		time.Sleep(700 * time.Millisecond) // the submit's GPUs and spec
		if err := e.Rename(ctx, name+contract.ClaimedSuffix, name); err != nil {
			lost++
			t.Errorf("round %d: the claimed standby is gone before its hand-over: %v", round, err)
			continue
		}
		time.Sleep(500 * time.Millisecond)
		if c, err := e.Inspect(ctx, name); err != nil || c.State != "running" {
			lost++
			t.Errorf("round %d: the job's container %s: %+v, %v; want it running", round, name, c.State, err)
		}
		e.Remove(ctx, name, true)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d prunes; %d of 16 standbys claimed, %d of those lost", prunes, claimed, lost)
	if claimed == 0 {
		t.Error("no standby was claimed: the test tested nothing")
	}
}

// cacheFixture writes an experiment named name whose setup runs setup,
// readable by otherUser, and returns its directory.
func cacheFixture(t *testing.T, name, setup string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "xrun-owners-exp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	y := fmt.Sprintf("name: %s\nresources: {timeout: 2m}\nbenchmark:\n  setup: %q\n  command: [sh, -c, \"exit 0\"]\n  implementations:\n    only: only\n", name, setup)
	if err := os.WriteFile(filepath.Join(dir, "xrun.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cacheFiles lists the files in volume vol of the test daemon.
func cacheFiles(t *testing.T, d *testenv.Daemon, bb, vol string) string {
	t.Helper()
	out, err := exec.Command("docker", "-H", d.Socket, "run", "--rm", "-v", vol+":/c", bb, "busybox", "find", "/c", "-type", "f").CombinedOutput()
	if err != nil {
		t.Fatalf("list %s: %v: %s", vol, err, out)
	}
	return string(out)
}

// Another user's experiment that picks the victim's name gets a compile
// cache of its own: what it plants there never reaches the victim's
// jobs. And a cache over its limit loses its least recently used entries
// before the next job starts.
func TestHostileOwnersCachesApart(t *testing.T) {
	d, e, bb := sharedDaemon(t)
	o := asOther(t)
	ctx := context.Background()
	me := store.CurrentUser()
	name := "e2e-owners-cache-" + randomHex(t)
	plant := cacheFixture(t, name, "mkdir -p /xrun/cache/triton/planted && busybox head -c 1048576 /dev/zero > /xrun/cache/triton/planted/filler")
	look := cacheFixture(t, name, "true")
	sub := func(run func(*testing.T, time.Duration, ...string) res, dir string, flags ...string) res {
		t.Helper()
		args := append([]string{"submit", "--cpu", "--host", d.Socket, "--base", bb}, flags...)
		return run(t, 3*time.Minute, append(args, dir)...)
	}
	mine := func(t *testing.T, limit time.Duration, args ...string) res { return x.Run(t, limit, args...) }

	sub(o.run, plant)
	sub(mine, look)
	vols, err := e.Volumes(ctx, map[string]string{contract.LabelCache: "", contract.LabelExperiment: name})
	if err != nil {
		t.Fatal(err)
	}
	byOwner := map[string]string{}
	for _, v := range vols {
		byOwner[v.Labels[contract.LabelOwner]] = v.Name
		if v.Labels[contract.LabelCacheTrust] != contract.CacheTrustJobUser {
			t.Errorf("volume %s: trust %q, want %s", v.Name, v.Labels[contract.LabelCacheTrust], contract.CacheTrustJobUser)
		}
	}
	if len(vols) != 2 || byOwner[me] == "" || byOwner[otherUser] == "" {
		t.Fatalf("cache volumes of %s: %v, want one of %s and one of %s", name, byOwner, me, otherUser)
	}
	if files := cacheFiles(t, d, bb, byOwner[me]); strings.Contains(files, "planted") {
		t.Errorf("%s's planted entry is in %s's cache:\n%s", otherUser, me, files)
	}
	if files := cacheFiles(t, d, bb, byOwner[otherUser]); !strings.Contains(files, "planted/filler") {
		t.Fatalf("the planting job left no entry in its own cache:\n%s", files)
	}

	// Over its limit, the filler goes before the next job.
	r := sub(o.run, look, "--cache-limit", "1000")
	if !strings.Contains(r.Stderr, "cache: removed the 1 least recently used entries (1048576 bytes)") {
		t.Errorf("the job does not say it trimmed its cache:\n%s\n%s", r.Stdout, r.Stderr)
	}
	if files := cacheFiles(t, d, bb, byOwner[otherUser]); strings.Contains(files, "filler") {
		t.Errorf("a cache over its limit kept its least recently used entry:\n%s", files)
	}
}
