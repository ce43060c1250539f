// Package gpus learns which GPUs a Docker host has and assigns them to
// jobs so that no two running xrun jobs hold the same GPU, even when many
// clients submit to the host at once; it gives jobs CPUs of their own the
// same way (CPUHost, cores.go).
//
// Inventory comes from the host itself: a short-lived container with all
// GPUs runs nvidia-smi (the NVIDIA container runtime mounts it in), and the
// answer is cached per host.
//
// Assignment uses the daemon's one atomic primitive that every client
// shares: container names are unique. GPU i is reserved by creating (never
// starting) a container named xrun-gpu-<i> labelled with the job id; a
// second client's create of the same name fails with a conflict. A
// reservation is freed when its job ends (Release), and one whose job is no
// longer running, or that never got a job container within Grace, is
// reclaimed by the next client that wants the GPU. Running job containers
// also carry the indices in LabelGPUIDs, which are honoured too.
//
// For tests of the assignment logic on machines without GPUs, an inventory
// can be given instead (XRUN_FAKE_GPUS=N, or gpus: N for a named host in
// xrun's config file). It is for tests only: on a real host the inventory
// is always learned from nvidia-smi.
package gpus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/internal/text"
)

// GPU is one device of a host.
type GPU struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	Name  string `json:"name"`
	// Driver is the NVIDIA driver's version ("580.159.04"), when known.
	Driver string `json:"driver,omitempty"`
}

// Inventory is what GPUs a host has.
type Inventory struct {
	Host      string    `json:"host"`
	GPUs      []GPU     `json:"gpus"`
	LearnedAt time.Time `json:"learned_at"`
	// Fake marks a test inventory (XRUN_FAKE_GPUS or a configured gpus: N).
	Fake bool `json:"fake,omitempty"`
}

// Driver is the host's NVIDIA driver version, "" when unknown (a test
// inventory, or one cached by an older xrun).
func (inv Inventory) Driver() string {
	for _, g := range inv.GPUs {
		if g.Driver != "" {
			return g.Driver
		}
	}
	return ""
}

// FakeEnv is the environment variable that sets a test inventory of N GPUs
// for every host. For tests of the assignment logic only.
const FakeEnv = "XRUN_FAKE_GPUS"

// Fake returns a test inventory of n GPUs.
func Fake(host string, n int) Inventory {
	inv := Inventory{Host: host, Fake: true, LearnedAt: time.Now()}
	for i := 0; i < n; i++ {
		inv.GPUs = append(inv.GPUs, GPU{Index: i, UUID: fmt.Sprintf("GPU-00000000-0000-0000-0000-%012d", i), Name: "test GPU (" + FakeEnv + ")"})
	}
	return inv
}

// Discover asks the host for its GPUs: a container from image (any image
// with a C library; the NVIDIA runtime brings nvidia-smi) runs
// `nvidia-smi --query-gpu=index,uuid,name,driver_version` with every GPU,
// and is removed.
func Discover(ctx context.Context, e engine.Engine, image string) ([]GPU, error) {
	id, err := e.Create(ctx, engine.ContainerSpec{
		Image:      image,
		Entrypoint: []string{"nvidia-smi"},
		Cmd:        []string{"--query-gpu=index,uuid,name,driver_version", "--format=csv,noheader"},
		GPUs:       &engine.GPURequest{Count: -1},
		// utility is the capability that mounts nvidia-smi into the container.
		Env:             []string{"NVIDIA_DRIVER_CAPABILITIES=utility"},
		Labels:          map[string]string{LabelInventory: "1"},
		NetworkDisabled: true,
	})
	if err != nil {
		return nil, fmt.Errorf("list the GPUs of host %s: %w", e.Host(), err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		e.Remove(rctx, id, true)
	}()
	wait := e.Wait(ctx, id, true)
	if err := e.Start(ctx, id); err != nil {
		return nil, fmt.Errorf("list the GPUs of host %s: %w", e.Host(), err)
	}
	res := <-wait
	var out, errOut bytes.Buffer
	if err := e.Logs(ctx, id, engine.LogOptions{Tail: "all"}, &out, &errOut); err != nil {
		return nil, fmt.Errorf("list the GPUs of host %s: read nvidia-smi output: %w", e.Host(), err)
	}
	if res.Err != nil || res.ExitCode != 0 {
		msg := strings.TrimSpace(errOut.String() + " " + out.String())
		return nil, fmt.Errorf("list the GPUs of host %s: nvidia-smi exited %d: %s (check the NVIDIA driver and container toolkit there)", e.Host(), res.ExitCode, text.OneLine(msg))
	}
	gpus, err := ParseNvidiaSMI(out.String())
	if err != nil {
		return nil, fmt.Errorf("list the GPUs of host %s: %w", e.Host(), err)
	}
	return gpus, nil
}

// ParseNvidiaSMI reads `nvidia-smi --query-gpu=index,uuid,name[,driver_version]
// --format=csv,noheader` output.
func ParseNvidiaSMI(s string) ([]GPU, error) {
	r := csv.NewReader(strings.NewReader(strings.TrimSpace(s)))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read nvidia-smi output %q: %w", text.OneLine(s), err)
	}
	var gpus []GPU
	for _, rec := range recs {
		if len(rec) != 3 && len(rec) != 4 {
			return nil, fmt.Errorf("read nvidia-smi output %q: want index, uuid, name and driver version", text.OneLine(s))
		}
		idx, err := strconv.Atoi(strings.TrimSpace(rec[0]))
		if err != nil {
			return nil, fmt.Errorf("read nvidia-smi output: GPU index %q is not a number", rec[0])
		}
		g := GPU{Index: idx, UUID: strings.TrimSpace(rec[1]), Name: strings.TrimSpace(rec[2])}
		if len(rec) == 4 {
			g.Driver = strings.TrimSpace(rec[3])
		}
		gpus = append(gpus, g)
	}
	if len(gpus) == 0 {
		return nil, fmt.Errorf("nvidia-smi found no GPUs")
	}
	return gpus, nil
}

// Cache keeps inventories under Dir, one file per host, for TTL.
type Cache struct {
	Dir string
	TTL time.Duration
}

// DefaultCache is $XDG_CACHE_HOME/xrun/gpus (or ~/.cache/xrun/gpus), one hour.
func DefaultCache(getenv func(string) string) Cache {
	if getenv == nil {
		getenv = os.Getenv
	}
	dir := getenv("XDG_CACHE_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = filepath.Join(home, ".cache")
	}
	return Cache{Dir: filepath.Join(dir, "xrun", "gpus"), TTL: time.Hour}
}

func (c Cache) path(host string) string {
	sum := sha256.Sum256([]byte(host))
	return filepath.Join(c.Dir, hex.EncodeToString(sum[:8])+".json")
}

// Get returns the cached inventory of host, if fresh.
func (c Cache) Get(host string) (Inventory, bool) {
	data, err := os.ReadFile(c.path(host))
	if err != nil {
		return Inventory{}, false
	}
	var inv Inventory
	if json.Unmarshal(data, &inv) != nil || inv.Host != host || len(inv.GPUs) == 0 || time.Since(inv.LearnedAt) > c.TTL {
		return Inventory{}, false
	}
	return inv, true
}

// Put stores inv atomically (concurrent clients may write the same host).
func (c Cache) Put(inv Inventory) error {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("cache the GPU inventory: %w", err)
	}
	data, err := json.Marshal(inv)
	if err != nil {
		return fmt.Errorf("cache the GPU inventory: %w", err)
	}
	tmp, err := os.CreateTemp(c.Dir, ".inv-*")
	if err != nil {
		return fmt.Errorf("cache the GPU inventory: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("cache the GPU inventory: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cache the GPU inventory: %w", err)
	}
	if err := os.Rename(tmp.Name(), c.path(host(inv))); err != nil {
		return fmt.Errorf("cache the GPU inventory: %w", err)
	}
	return nil
}

func host(inv Inventory) string { return inv.Host }

// Lookup returns the inventory of the host behind e: a test inventory
// when fake > 0 or XRUN_FAKE_GPUS is set, else the cache, else Discover
// (with image) and a cache entry.
func Lookup(ctx context.Context, e engine.Engine, image string, fake int, c Cache, getenv func(string) string) (Inventory, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv(FakeEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return Inventory{}, fmt.Errorf("%s=%q: give a number of test GPUs", FakeEnv, v)
		}
		fake = n
	}
	if fake > 0 {
		return Fake(e.Host(), fake), nil
	}
	if inv, ok := c.Get(e.Host()); ok {
		return inv, nil
	}
	gpus, err := Discover(ctx, e, image)
	if err != nil {
		return Inventory{}, err
	}
	inv := Inventory{Host: e.Host(), GPUs: gpus, LearnedAt: time.Now()}
	// A cache that cannot be written only costs a rediscovery next time.
	_ = c.Put(inv)
	return inv, nil
}
