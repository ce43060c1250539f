// Package version holds the version of the xrun binaries. The client and
// the runner share it, so a client can tell whether a runner matches it; and the commit of an
// experiment's files (GitHead), for results.json's provenance.
package version

import "runtime/debug"

// Version is set at build time with
//
//	go build -ldflags "-X github.com/xrun-dev/xrun/internal/version.Version=v0.3.0"
//
// When it is not, package initialisation fills it from the build info
// (see Get), so it is never empty.
var Version = ""

func init() { Version = Get() }

// Get returns the version: Version when set, else the main module's
// version, else "devel+<revision>[-dirty]" from the build's VCS stamp, else
// "devel".
func Get() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel+" + rev
}
