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
