package gpus

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/contract"
)

// fakeHost is the shared fake engine (enginetest), with the containers
// GPU assignment reads: jobs and reservations that other clients made.
type fakeHost struct{ *enginetest.Engine }

func newFake() fakeHost {
	f := enginetest.New()
	f.ImageIDs["img"] = "sha256:img"
	return fakeHost{f}
}

// job adds a job container in state with the given GPU label.
func (f fakeHost) job(id, state, gpuIDs string) {
	labels := map[string]string{contract.LabelJob: id}
	if gpuIDs != "" {
		labels[LabelGPUIDs] = gpuIDs
	}
	f.Add("job-"+id, state, labels, time.Now())
}

// reservation adds a reservation of GPU idx for job, created age ago.
func (f fakeHost) reservation(idx int, job string, age time.Duration) {
	f.Add(ReservationName(idx), "created", map[string]string{LabelHolder: job, LabelReservation: fmt.Sprint(idx)}, time.Now().Add(-age))
}

func indices(gs []GPU) []int {
	var out []int
	for _, g := range gs {
		out = append(out, g.Index)
	}
	return out
}

func TestAcquire(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(f fakeHost)
		req     Request
		want    []int
		wantErr string
	}{
		{name: "one of four", req: Request{Count: 1}, want: []int{0}},
		{name: "two of four", req: Request{Count: 2}, want: []int{0, 1}},
		{name: "all", req: Request{Count: -1}, want: []int{0, 1, 2, 3}},
		{name: "pinned by index", req: Request{IDs: []string{"2", "0"}}, want: []int{0, 2}},
		{name: "pinned by uuid", req: Request{IDs: []string{Fake("", 4).GPUs[3].UUID}}, want: []int{3}},
		{name: "skips a reserved GPU", setup: func(f fakeHost) { f.reservation(0, "a", 0); f.job("a", "running", "0") }, req: Request{Count: 1}, want: []int{1}},
		{name: "skips a GPU labelled on a running job", setup: func(f fakeHost) { f.job("b", "running", "0,1") }, req: Request{Count: 2}, want: []int{2, 3}},
		{name: "a finished job's label holds nothing", setup: func(f fakeHost) { f.job("b", "exited", "0") }, req: Request{Count: 1}, want: []int{0}},
		{name: "reclaims the reservation of a finished job", setup: func(f fakeHost) { f.reservation(0, "done", time.Minute); f.job("done", "exited", "0") }, req: Request{IDs: []string{"0", "1"}}, want: []int{0, 1}},
		{name: "reclaims a reservation whose job never appeared", setup: func(f fakeHost) { f.reservation(1, "ghost", time.Hour) }, req: Request{IDs: []string{"1", "3"}}, want: []int{1, 3}},
		{name: "a young reservation without its job holds", setup: func(f fakeHost) { f.reservation(1, "starting", time.Second) }, req: Request{IDs: []string{"1", "3"}},
			wantErr: "cannot give this job GPUs 1,3 now (1 free; held: GPU 1 by job starting)"},
		{name: "a created job holds", setup: func(f fakeHost) { f.reservation(2, "c", time.Hour); f.job("c", "created", "") }, req: Request{Count: -1}, wantErr: "held: GPU 2 by job c"},
		{name: "busy", setup: func(f fakeHost) {
			for i := 0; i < 4; i++ {
				f.reservation(i, fmt.Sprintf("j%d", i), 0)
			}
		}, req: Request{Count: 1}, wantErr: "(0 free; held: GPU 0 by job j0, GPU 1 by job j1, GPU 2 by job j2, GPU 3 by job j3): wait for them with --queue"},
		{name: "more than the host has", req: Request{Count: 5}, wantErr: "has 4 GPUs, the job asks for 5"},
		{name: "unknown id", req: Request{IDs: []string{"0", "7"}}, wantErr: `has no GPU "7" (it has 0,1,2,3)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			if tc.setup != nil {
				tc.setup(f)
			}
			a := &Assigner{Engine: f, Inventory: Fake(f.Host(), 4), Image: "img", Grace: time.Minute}
			got, err := a.Acquire(context.Background(), "me", tc.req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error %q, got %v (%v)", tc.wantErr, err, indices(got))
				}
				// A failed acquire leaves nothing of ours behind.
				if cs, _ := f.List(context.Background(), map[string]string{LabelHolder: "me"}, true); len(cs) != 0 {
					t.Fatalf("%d reservations left behind", len(cs))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(indices(got), tc.want) {
				t.Fatalf("got %v, want %v", indices(got), tc.want)
			}
			cs, _ := f.List(context.Background(), map[string]string{LabelHolder: "me"}, true)
			if len(cs) != len(tc.want) {
				t.Fatalf("%d reservations for %d GPUs", len(cs), len(tc.want))
			}
			if err := Release(context.Background(), f, "me"); err != nil {
				t.Fatal(err)
			}
			if cs, _ := f.List(context.Background(), map[string]string{LabelHolder: "me"}, true); len(cs) != 0 {
				t.Fatalf("release left %d reservations", len(cs))
			}
		})
	}
}

// resources.gpu_type picks among a mixed host's GPUs by name.
func TestAcquireType(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(f fakeHost)
		req     Request
		want    []int
		wantErr string
	}{
		{name: "one", req: Request{Count: 1, Type: "h100"}, want: []int{1}},
		{name: "all of the type", req: Request{Count: -1, Type: "H100"}, want: []int{1, 3}},
		{name: "skips a busy one of the type", setup: func(f fakeHost) { f.reservation(1, "a", 0); f.job("a", "running", "1") }, req: Request{Count: 1, Type: "H100"}, want: []int{3}},
		{name: "busy", setup: func(f fakeHost) { f.reservation(1, "a", 0); f.reservation(3, "b", 0) }, req: Request{Count: 1, Type: "H100"},
			wantErr: "cannot give this job 1 GPU of type H100 now"},
		{name: "more than the host has of the type", req: Request{Count: 3, Type: "H100"}, wantErr: "has 2 H100 GPUs, the job asks for 3"},
		{name: "pinned, right type", req: Request{IDs: []string{"3"}, Type: "H100"}, want: []int{3}},
		{name: "pinned, wrong type", req: Request{IDs: []string{"0"}, Type: "H100"}, wantErr: "GPU 0 of host unix:///fake.sock is a NVIDIA A10G, not a H100 (resources.gpu_type): pick one of 1,3"},
		{name: "no such type", req: Request{Count: 1, Type: "B200"}, wantErr: "has no B200 GPU (resources.gpu_type; it has 2x NVIDIA A10G, 2x NVIDIA H100 80GB HBM3)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			if tc.setup != nil {
				tc.setup(f)
			}
			inv := Fake(f.Host(), 4)
			for i := range inv.GPUs {
				inv.GPUs[i].Name = map[bool]string{true: "NVIDIA H100 80GB HBM3", false: "NVIDIA A10G"}[i%2 == 1]
			}
			a := &Assigner{Engine: f, Inventory: inv, Image: "img", Grace: time.Minute}
			got, err := a.Acquire(context.Background(), "me", tc.req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error %q, got %v (%v)", tc.wantErr, err, indices(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(indices(got), tc.want) {
				t.Fatalf("got %v, want %v", indices(got), tc.want)
			}
		})
	}
}

func TestAcquireNoGPUs(t *testing.T) {
	a := &Assigner{Engine: newFake(), Image: "img"}
	if _, err := a.Acquire(context.Background(), "me", Request{Count: 1}); err == nil || !strings.Contains(err.Error(), "--cpu") {
		t.Fatalf("got %v", err)
	}
}

func TestAcquireQueueWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.reservation(0, "first", 0)
		f.job("first", "running", "0")
		var lines []string
		var mu sync.Mutex
		a := &Assigner{Engine: f, Inventory: Fake(f.Host(), 1), Image: "img", Queue: true, Poll: 20 * time.Millisecond,
			Progress: func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() }}
		go func() {
			time.Sleep(150 * time.Millisecond)
			f.SetState("job-first", "exited")
			Release(context.Background(), f, "first")
		}()
		ctx0, cancel0 := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel0()
		got, err := a.Acquire(ctx0, "second", Request{Count: 1})
		if err != nil || !reflect.DeepEqual(indices(got), []int{0}) {
			t.Fatalf("got %v, %v", indices(got), err)
		}
		mu.Lock()
		if len(lines) != 1 || !strings.Contains(lines[0], "queued on unix:///fake.sock for 1 GPU (held: 0:first)") {
			t.Fatalf("progress lines: %q", lines)
		}
		mu.Unlock()

		// A queued acquire ends with its context.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := a.Acquire(ctx, "third", Request{Count: 1}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
	})
}

// TestAcquireConcurrent: many clients at once never share a GPU.
func TestAcquireConcurrent(t *testing.T) {
	f := newFake()
	const jobs = 40
	var mu sync.Mutex
	holding := map[int]string{}
	var wg sync.WaitGroup
	errs := make(chan error, jobs)
	for i := 0; i < jobs; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := fmt.Sprintf("job%02d", i)
			a := &Assigner{Engine: f, Inventory: Fake(f.Host(), 4), Image: "img", Queue: true, Poll: 5 * time.Millisecond}
			got, err := a.Acquire(context.Background(), id, Request{Count: 1 + i%2})
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			for _, g := range got {
				if other, ok := holding[g.Index]; ok {
					errs <- fmt.Errorf("GPU %d given to %s while %s holds it", g.Index, id, other)
				}
				holding[g.Index] = id
			}
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			mu.Lock()
			for _, g := range got {
				delete(holding, g.Index)
			}
			mu.Unlock()
			if err := Release(context.Background(), f, id); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestParseNvidiaSMI(t *testing.T) {
	tests := []struct {
		in      string
		want    []GPU
		wantErr string
	}{
		{in: "0, GPU-aaa, NVIDIA H100 80GB HBM3\n1, GPU-bbb, NVIDIA H100 80GB HBM3\n",
			want: []GPU{{0, "GPU-aaa", "NVIDIA H100 80GB HBM3", ""}, {1, "GPU-bbb", "NVIDIA H100 80GB HBM3", ""}}},
		{in: "0, GPU-aaa, NVIDIA H100 80GB HBM3, 580.159.04\n",
			want: []GPU{{0, "GPU-aaa", "NVIDIA H100 80GB HBM3", "580.159.04"}}},
		{in: "0, GPU-aaa\n", wantErr: "want index, uuid, name and driver version"},
		{in: "", wantErr: "found no GPUs"},
		{in: "x, GPU-a, A100\n", wantErr: "not a number"},
		{in: "No devices were found\n", wantErr: "read nvidia-smi output"},
	}
	for _, tc := range tests {
		got, err := ParseNvidiaSMI(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: want error %q, got %v", tc.in, tc.wantErr, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %v, %v", tc.in, got, err)
		}
	}
}

func TestLookupFakeAndCache(t *testing.T) {
	f := newFake()
	env := map[string]string{FakeEnv: "3"}
	c := Cache{Dir: t.TempDir(), TTL: time.Hour}
	inv, err := Lookup(context.Background(), f, "img", 0, c, func(k string) string { return env[k] })
	if err != nil || len(inv.GPUs) != 3 || !inv.Fake {
		t.Fatalf("got %+v, %v", inv, err)
	}
	env = map[string]string{FakeEnv: "x"}
	if _, err := Lookup(context.Background(), f, "img", 0, c, func(k string) string { return env[k] }); err == nil {
		t.Fatal("a bad XRUN_FAKE_GPUS is accepted")
	}
	// A cached inventory is used without asking the host (the fake
	// engine would panic on Start).
	real := Inventory{Host: f.Host(), GPUs: []GPU{{0, "GPU-a", "NVIDIA H100", "580.159.04"}}, LearnedAt: time.Now()}
	if err := c.Put(real); err != nil {
		t.Fatal(err)
	}
	inv, err = Lookup(context.Background(), f, "img", 0, c, func(string) string { return "" })
	if err != nil || !reflect.DeepEqual(inv.GPUs, real.GPUs) {
		t.Fatalf("got %+v, %v", inv, err)
	}
	if _, ok := (Cache{Dir: c.Dir, TTL: time.Nanosecond}).Get(f.Host()); ok {
		t.Fatal("an expired entry is used")
	}
}
