package dockerhost

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// jobSpec is the spec of job id of experiment k, as submit.JobSpec makes
// it, with code hash code.
// The spec hash follows the code: an edit of xrun.yaml changes both.
func jobSpec(id, code string) backend.Spec {
	return backend.Spec{
		Name: "xrun-k-" + id, Image: "test/base:1",
		Env: []string{contract.EnvJobID + "=" + id, contract.EnvCodeHash + "=" + code, "A=1"},
		Labels: map[string]string{contract.LabelJob: id, contract.LabelExperiment: "k", contract.LabelOwner: "me",
			contract.LabelCodeHash: code, contract.LabelSpecHash: "spec-" + code, gpus.LabelGPUIDs: "0"},
		GPUs: &backend.GPUs{IDs: []string{"0"}}, PostToken: "s3cr3t",
	}
}

// hanging makes every container of f run until removed.
func hanging() *enginetest.Engine {
	f := enginetest.New()
	f.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Hang: true} }
	return f
}

// A standby waits under a name of its own with its job's id, without
// the per-submit values, the token or a claim on GPUs; ps does not list
// it. The next submit claims it, takes its id and hands it the code,
// the token and its code hash in one copy, ending with the go file;
// the job's time runs from then.
func TestStandbyClaimedAndHanded(t *testing.T) {
	ctx := context.Background()
	f := hanging()
	b := New(f)
	if err := b.MakeStandby(ctx, jobSpec("0a", "code1"), time.Hour); err != nil {
		t.Fatal(err)
	}
	made := f.Made()
	if len(made) != 1 {
		t.Fatalf("made %d containers, want the standby", len(made))
	}
	sc := made[0]
	if sc.C.Name != "xrun-k-0a-standby" || sc.C.State != "running" {
		t.Errorf("standby %q is %s, want xrun-k-0a-standby running", sc.C.Name, sc.C.State)
	}
	if _, has := sc.Spec.Labels[gpus.LabelGPUIDs]; has || sc.Spec.Labels[contract.LabelCodeHash] != "" || sc.Spec.Labels[contract.LabelSpecHash] != "" || !contract.WaitingStandby(sc.C.Name, sc.C.Labels) {
		t.Errorf("standby labels %v: want no GPU label, no code or spec hash, and a waiting standby's", sc.Spec.Labels)
	}
	if sc.Spec.GPUs == nil || !slices.Equal(sc.Spec.GPUs.IDs, []string{"0"}) {
		t.Errorf("standby GPUs %+v, want its job's device request", sc.Spec.GPUs)
	}
	if !slices.Contains(sc.Spec.Env, contract.EnvStandby+"=3600") || slices.ContainsFunc(sc.Spec.Env, func(kv string) bool { return strings.HasPrefix(kv, contract.EnvCodeHash+"=") }) {
		t.Errorf("standby env %v: want %s=3600 and no code hash", sc.Spec.Env, contract.EnvStandby)
	}
	if len(sc.Copied) != 0 {
		t.Errorf("the standby got %v before its job", sc.Copied)
	}
	if ls, _ := b.List(ctx, true); len(ls) != 0 {
		t.Errorf("List shows the waiting standby: %+v", ls)
	}

	st := b.ClaimStandby(ctx, "k", "me")
	if st == nil || st.JobID != "0a" {
		t.Fatalf("claimed %+v, want the standby of job 0a", st)
	}
	if again := b.ClaimStandby(ctx, "k", "me"); again != nil {
		t.Errorf("a claimed standby was claimed again: %+v", again)
	}
	if c, _ := f.Inspect(ctx, sc.C.ID); c.Name != "xrun-k-0a-claimed" {
		t.Errorf("claimed standby named %q, want xrun-k-0a-claimed", c.Name)
	}
	if ls, _ := b.List(ctx, true); len(ls) != 0 {
		t.Errorf("List shows the claimed standby before its hand-over: %+v", ls)
	}
	j := &store.Job{ID: st.JobID}
	// The job's own CPUs, which the standby was not made on: it moves
	// onto them as it is handed the job.
	handed := jobSpec("0a", "code2")
	handed.CPUSet = "2-3"
	if err := st.Hand(ctx, j, handed); err != nil {
		t.Fatal(err)
	}
	if sc.Spec.CPUSet != "2-3" {
		t.Errorf("the handed standby runs on CPUs %q, want its job's 2-3", sc.Spec.CPUSet)
	}
	if j.ContainerID != sc.C.ID || j.ContainerName != "xrun-k-0a" || j.Started == nil {
		t.Errorf("job %+v: want the standby's container, renamed, and when it was handed over", j)
	}
	want := []string{contract.PostTokenFile, contract.StandbyGoFile}
	if len(sc.Copied) != 2 || !slices.Equal(sc.Copied, want) {
		t.Errorf("copied %v, want %v in that order", sc.Copied, want)
	}
	s, err := b.State(ctx, j)
	if err != nil || !s.StartedAt.Equal(*j.Started) {
		t.Errorf("state %+v (%v): the job's time must run from the hand-over", s, err)
	}
	if ls, _ := b.List(ctx, true); len(ls) != 1 || ls[0].Job.ID != "0a" {
		t.Errorf("List after the hand-over: %+v, want job 0a", ls)
	}
}

// A standby made with the zygote's preload (an experiment that uses
// torch.compile) is claimed by the next job, whose spec has no such
// variable: the key leaves it out, as it does the standby's wait.
func TestStandbyPreloadOutsideTheKey(t *testing.T) {
	ctx := context.Background()
	f := hanging()
	b := New(f)
	s := jobSpec("0b", "code1")
	s.Env = append(s.Env, contract.EnvZygotePreload+"=torch._dynamo")
	if StandbyKey(s) != StandbyKey(jobSpec("0b", "code1")) {
		t.Fatal("the preload variable changes the standby's key")
	}
	if err := b.MakeStandby(ctx, s, time.Hour); err != nil {
		t.Fatal(err)
	}
	if made := f.Made(); len(made) != 1 || !slices.Contains(made[0].Spec.Env, contract.EnvZygotePreload+"=torch._dynamo") {
		t.Fatalf("standby env: want %s set, made %+v", contract.EnvZygotePreload, made)
	}
	st := b.ClaimStandby(ctx, "k", "me")
	if st == nil {
		t.Fatal("no standby claimed")
	}
	if err := st.Hand(ctx, &store.Job{ID: st.JobID}, jobSpec("0b", "code2")); err != nil {
		t.Fatalf("hand-over to a job without the preload variable: %v", err)
	}
}

// A standby claimed by a client that died before the hand-over is no
// job (List hides it), no waiting standby (no submit claims it, a new
// standby leaves it alone), and prune removes it once its wait is over.
func TestStandbyClaimedNotHanded(t *testing.T) {
	ctx := context.Background()
	f := hanging()
	b := New(f)
	if err := b.MakeStandby(ctx, jobSpec("0d", "c"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if st := b.ClaimStandby(ctx, "k", "me"); st == nil {
		t.Fatal("no standby to claim")
	}
	if err := b.MakeStandby(ctx, jobSpec("0e", "c"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if len(f.Containers) != 2 {
		t.Errorf("%d containers, want the claimed standby and the new one", len(f.Containers))
	}
	if ls, _ := b.List(ctx, true); len(ls) != 0 {
		t.Errorf("List shows %+v, want no job", ls)
	}
	if st := b.ClaimStandby(ctx, "k", "me"); st == nil || st.JobID != "0e" {
		t.Errorf("claimed %+v, want the new standby", st)
	}
	// Their submits may hand them their jobs while they wait: prune keeps
	// them, and removes them once their wait is over.
	if n, err := count(b.RemoveStandbys(ctx, "", false)); n != 0 || err != nil || len(f.Containers) != 2 {
		t.Errorf("prune: %d, %v, %d left; want both claimed standbys kept while they wait", n, err, len(f.Containers))
	}
	for _, c := range f.Containers {
		c.C.Labels[labelStandbyUntil] = time.Now().Add(-2 * standbyMargin).UTC().Format(time.RFC3339)
	}
	if n, err := count(b.RemoveStandbys(ctx, "", true)); n != 2 || err != nil {
		t.Errorf("dry run: %d, %v; want both claimed standbys counted", n, err)
	}
	if n, err := count(b.RemoveStandbys(ctx, "", false)); n != 2 || err != nil || len(f.Containers) != 0 {
		t.Errorf("prune: %d, %v, %d left; want both removed", n, err, len(f.Containers))
	}
}

// Of submits claiming at once, one gets the standby.
func TestStandbyClaimedOnce(t *testing.T) {
	ctx := context.Background()
	b := New(hanging())
	if err := b.MakeStandby(ctx, jobSpec("0b", "c"), time.Hour); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b.ClaimStandby(ctx, "k", "me") != nil {
				mu.Lock()
				got++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if got != 1 {
		t.Errorf("%d claims got the standby, want 1", got)
	}
}

// A standby made for other settings, or about to stop waiting, is
// removed, and the job starts a container of its own.
func TestStandbyMismatch(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		edit func(*backend.Spec)
		idle time.Duration
	}{
		{"other environment", func(s *backend.Spec) { s.Env = append(s.Env, "B=2") }, time.Hour},
		{"other GPU", func(s *backend.Spec) { s.GPUs = &backend.GPUs{IDs: []string{"1"}} }, time.Hour},
		{"stops waiting soon", func(*backend.Spec) {}, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := hanging()
			b := New(f)
			if err := b.MakeStandby(ctx, jobSpec("0c", "c"), tc.idle); err != nil {
				t.Fatal(err)
			}
			st := &Standby{JobID: "0c", b: b, c: f.Made()[0].C}
			st.c.Name = "xrun-k-0c"
			s := jobSpec("0c", "c")
			tc.edit(&s)
			j := &store.Job{ID: "0c"}
			if err := st.Hand(ctx, j, s); !errors.Is(err, ErrStandbyMismatch) {
				t.Errorf("hand: %v, want ErrStandbyMismatch", err)
			}
			if len(f.Containers) != 0 || j.ContainerID != "" {
				t.Errorf("left %d containers, job %+v: the standby must go", len(f.Containers), j)
			}
		})
	}
}

// A new standby replaces the experiment's others; prune removes all.
func TestStandbyReplacedAndPruned(t *testing.T) {
	ctx := context.Background()
	f := hanging()
	b := New(f)
	for _, id := range []string{"01", "02"} {
		if err := b.MakeStandby(ctx, jobSpec(id, "c"), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.Containers) != 1 {
		t.Errorf("%d standbys of one experiment, want the newest alone", len(f.Containers))
	}
	other := jobSpec("03", "c")
	other.Labels[contract.LabelExperiment] = "other"
	if err := b.MakeStandby(ctx, other, time.Hour); err != nil {
		t.Fatal(err)
	}
	if n, err := count(b.RemoveStandbys(ctx, "", true)); n != 2 || err != nil || len(f.Containers) != 2 {
		t.Errorf("dry run: %d, %v, %d containers; want 2 counted, none removed", n, err, len(f.Containers))
	}
	if n, err := count(b.RemoveStandbys(ctx, "", false)); n != 2 || err != nil || len(f.Containers) != 0 {
		t.Errorf("prune: %d, %v, %d left; want 2 removed", n, err, len(f.Containers))
	}
}

// Submits that end at once leave one standby between them.
func TestStandbyMadeAtOnceLeavesOne(t *testing.T) {
	ctx := context.Background()
	f := hanging()
	b := New(f)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.MakeStandby(ctx, jobSpec(fmt.Sprintf("1%d", i), "c"), time.Hour); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := len(f.Containers); n != 1 {
		t.Errorf("%d standbys after six made at once, want 1", n)
	}
}

// listHook is an engine that runs after, once, right after a List: what
// another client does between a prune's list and its removals.
type listHook struct {
	*enginetest.Engine
	after func()
}

func (h *listHook) List(ctx context.Context, labels map[string]string, all bool) ([]engine.Container, error) {
	cs, err := h.Engine.List(ctx, labels, all)
	if f := h.after; f != nil {
		h.after = nil
		f()
	}
	return cs, err
}

// A prune that listed a waiting standby just before a submit claimed it
// and handed it its job leaves the job's container alone; a claimed
// standby whose submit may still hand it its job stays too, and goes
// once its wait is over.
func TestStandbyPruneLeavesAClaimedOne(t *testing.T) {
	ctx := context.Background()
	f := hanging()
	b := New(f)
	if err := b.MakeStandby(ctx, jobSpec("0f", "c"), time.Hour); err != nil {
		t.Fatal(err)
	}
	h := &listHook{Engine: f}
	h.after = func() {
		st := b.ClaimStandby(ctx, "k", "me")
		if st == nil {
			t.Fatal("no standby to claim")
		}
		if err := st.Hand(ctx, &store.Job{ID: "0f"}, jobSpec("0f", "c")); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := count(New(h).RemoveStandbys(ctx, "", false)); n != 0 || err != nil {
		t.Errorf("prune: %d, %v; want none removed", n, err)
	}
	if len(f.Containers) != 1 {
		t.Fatalf("prune removed the job's container (%d left)", len(f.Containers))
	}
	for _, c := range f.Containers {
		if c.C.Name != "xrun-k-0f" || c.C.State != "running" {
			t.Errorf("the job's container is %q, %s; want xrun-k-0f running", c.C.Name, c.C.State)
		}
	}

	// Claimed and not handed yet: kept while the claim may be handed.
	if err := b.MakeStandby(ctx, jobSpec("10", "c"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if b.ClaimStandby(ctx, "k", "me") == nil {
		t.Fatal("no standby to claim")
	}
	if n, err := count(b.RemoveStandbys(ctx, "", false)); n != 0 || err != nil || len(f.Containers) != 2 {
		t.Errorf("prune: %d, %v, %d containers; want the claimed standby kept", n, err, len(f.Containers))
	}
}

// A new standby replaces the experiment's older ones, but not one that a
// submit claimed since it listed them.
func TestStandbyReplaceLeavesAClaimedOne(t *testing.T) {
	ctx := context.Background()
	f := hanging()
	b := New(f)
	if err := b.MakeStandby(ctx, jobSpec("11", "c"), time.Hour); err != nil {
		t.Fatal(err)
	}
	h := &listHook{Engine: f}
	h.after = func() {
		// A submit that listed the standbys before the new one came.
		if err := f.Rename(ctx, "xrun-k-11-standby", "xrun-k-11-claimed"); err != nil {
			t.Fatal(err)
		}
		if err := f.Rename(ctx, "xrun-k-11-claimed", "xrun-k-11"); err != nil {
			t.Fatal(err)
		}
	}
	if err := New(h).MakeStandby(ctx, jobSpec("12", "c"), time.Hour); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, c := range f.Containers {
		names = append(names, c.C.Name)
	}
	slices.Sort(names)
	if want := []string{"xrun-k-11", "xrun-k-12-standby"}; !slices.Equal(names, want) {
		t.Errorf("containers %v, want %v: the job's and the new standby", names, want)
	}
}

func count(cs []engine.Container, err error) (int, error) { return len(cs), err }

// Prune for one owner removes that owner's standbys alone, and names them.
func TestStandbyPrunedPerOwner(t *testing.T) {
	ctx := context.Background()
	f := hanging()
	b := New(f)
	mine, theirs := jobSpec("21", "c"), jobSpec("22", "c")
	theirs.Labels[contract.LabelOwner] = "you"
	for _, s := range []backend.Spec{mine, theirs} {
		if err := b.MakeStandby(ctx, s, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	for _, dry := range []bool{true, false} {
		cs, err := b.RemoveStandbys(ctx, "me", dry)
		if err != nil || len(cs) != 1 || cs[0].Name != "xrun-k-21-standby" {
			t.Errorf("prune (dry %v): %+v, %v; want xrun-k-21-standby alone", dry, cs, err)
		}
	}
	if len(f.Containers) != 1 || b.ClaimStandby(ctx, "k", "you") == nil {
		t.Errorf("%d containers left; want the other owner's standby, waiting", len(f.Containers))
	}
}
