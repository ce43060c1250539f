package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/xrun-dev/xrun/contract"
)

func TestParseUser(t *testing.T) {
	tests := []struct {
		in      string
		want    User
		wantErr bool
	}{
		{"65532:65532", User{65532, 65532}, false},
		{"1000", User{1000, 1000}, false},
		{" 7:8 ", User{7, 8}, false},
		{"xrun", User{}, true},
		{"1:x", User{}, true},
		{"-1:0", User{}, true},
		{"", User{}, true},
	}
	for _, tt := range tests {
		got, err := ParseUser(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseUser(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(contract.EnvWorkerUser, "")
	if u, err := FromEnv(); u != nil || err != nil {
		t.Errorf("unset: %v, %v; want nil, nil", u, err)
	}
	t.Setenv(contract.EnvWorkerUser, "0:0")
	if _, err := FromEnv(); err == nil {
		t.Error("a root worker user must be refused")
	}
	t.Setenv(contract.EnvWorkerUser, contract.JobUser)
	u, err := FromEnv()
	if os.Geteuid() == 0 {
		if err != nil || u == nil || u.String() != contract.JobUser {
			t.Errorf("as root: %v, %v", u, err)
		}
	} else if err == nil {
		t.Error("a runner that is not root cannot switch users: FromEnv must say so")
	}
}

func TestStatusFields(t *testing.T) {
	st := []byte("Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t7\nUid:\t65532\t65532\t65532\t65532\nGid:\t65532\t65532\t65532\t65532\n")
	name, uids, state := statusFields(st)
	if name != "python3" || state != "S" || !slices.Equal(uids, []int{65532, 65532, 65532, 65532}) {
		t.Errorf("statusFields = %q, %v, %q", name, uids, state)
	}
}

func TestCheckPrivate(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivate(dir); err != nil {
		t.Errorf("a private directory: %v", err)
	}
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	if err := CheckPrivate(open); err == nil {
		t.Error("a directory others may write must be refused")
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivate(link); err == nil {
		t.Error("a link to a directory must be refused")
	}
}
