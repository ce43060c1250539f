package dockerhost

import (
	"context"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/gpus"
)

func TestCheckDriver(t *testing.T) {
	f := enginetest.New()
	f.ImageIDs["xrun/x:1"] = "sha256:x"
	f.ImageEnv = map[string][]string{"xrun/x:1": {"PATH=/bin", "CUDA_VERSION=13.0.1"}}
	inv := func(driver string) gpus.Inventory {
		return gpus.Inventory{Host: f.Host(), GPUs: []gpus.GPU{{Index: 0, UUID: "GPU-a", Name: "NVIDIA H100", Driver: driver}}}
	}
	err := checkDriver(context.Background(), f, "xrun/x:1", inv("575.51.03"))
	want := "host unix:///fake.sock cannot run xrun/x:1: the image is built for CUDA 13.0.1, which needs driver 580.65.06 or newer; the host's NVIDIA driver 575.51.03 runs CUDA 12 and older"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("old driver: %v, want %q", err, want)
	}
	for _, driver := range []string{"580.159.04", ""} {
		if err := checkDriver(context.Background(), f, "xrun/x:1", inv(driver)); err != nil {
			t.Errorf("driver %q: %v", driver, err)
		}
	}
}
