package backend

import (
	"errors"
	"testing"
)

func TestRefuseNamesTheFirstFeatureLacking(t *testing.T) {
	c := Capabilities{Name: "a cluster", Flag: "--cluster", Lacks: map[Feature]string{
		NoNetwork: "its policy decides", RunAsRoot: "jobs run as the user"}}
	if err := c.Refuse(GPUsByID, CPUReservation); err != nil {
		t.Errorf("features it has refused: %v", err)
	}
	err := c.Refuse(RunAsRoot, NoNetwork)
	var un *UnsupportedError
	if !errors.As(err, &un) || un.Asked != NoNetwork || un.Flag != "--cluster" || un.Instead != "its policy decides" {
		t.Fatalf("Refuse(root, no network) = %#v, want the no-network refusal first", err)
	}
	if got, want := err.Error(), "no network does not apply on a cluster: its policy decides"; got != want {
		t.Errorf("refusal %q, want %q", got, want)
	}
	if !c.Has(GPUsByID) || c.Has(RunAsRoot) {
		t.Error("Has disagrees with Lacks")
	}
}

func TestSpecAsks(t *testing.T) {
	for _, c := range []struct {
		s    Spec
		want []Feature
	}{
		{Spec{}, nil},
		{Spec{GPUs: &GPUs{Count: 1}}, nil},
		{Spec{GPUs: &GPUs{Count: -1}}, []Feature{GPUsByID}},
		{Spec{GPUs: &GPUs{IDs: []string{"1"}}, NoNetwork: true}, []Feature{GPUsByID, NoNetwork}},
	} {
		got := c.s.Asks()
		if len(got) != len(c.want) {
			t.Errorf("%+v asks %v, want %v", c.s, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%+v asks %v, want %v", c.s, got, c.want)
			}
		}
	}
}

func TestMissingNamesTheFirstSettingAbsent(t *testing.T) {
	c := Capabilities{Name: "a cluster", Needs: map[Setting]string{
		KubeContext: "it names the cluster", Registry: "nodes pull from one"}}
	none := func(Setting) bool { return false }
	var miss *MissingError
	if err := c.Missing(none); !errors.As(err, &miss) || miss.Setting != Registry || miss.Why != "nodes pull from one" {
		t.Fatalf("Missing(nothing given) = %#v, want the registry first", err)
	}
	if got, want := miss.Error(), "no registry: nodes pull from one"; got != want {
		t.Errorf("refusal %q, want %q", got, want)
	}
	onlyRegistry := func(s Setting) bool { return s == Registry }
	if err := c.Missing(onlyRegistry); !errors.As(err, &miss) || miss.Setting != KubeContext {
		t.Errorf("Missing(registry given) = %v, want the context", err)
	}
	if err := (Capabilities{Name: "a Docker host"}).Missing(none); err != nil {
		t.Errorf("a place that needs nothing refused: %v", err)
	}
}
