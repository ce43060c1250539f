package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	tests := []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}}, "v0.3.0"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}}, "devel+0123456789ab"},
		{debug.BuildInfo{Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}}, "devel+abc-dirty"},
	}
	for _, tt := range tests {
		if got := fromBuildInfo(&tt.bi); got != tt.want {
			t.Errorf("fromBuildInfo(%+v) = %q, want %q", tt.bi, got, tt.want)
		}
	}
}

func TestGetPrefersVersion(t *testing.T) {
	old := Version
	defer func() { Version = old }()
	Version = "v9.9.9"
	if got := Get(); got != "v9.9.9" {
		t.Errorf("Get() = %q", got)
	}
	Version = ""
	if Get() == "" {
		t.Error("Get() is empty without -ldflags")
	}
}
