package base

import (
	"runtime/debug"
	"strings"
)

// modulePath is klt's module, named when the build recorded no module (a binary built outside
// module mode).
const modulePath = "github.com/kafkalambda/toolkit/cmd/klt"

// VersionLine returns what "klt --version" prints: the module path and version, the commit it
// was built from, and the Go version, from the build information the go command records:
//
//	klt github.com/kafkalambda/toolkit/cmd/klt v0.0.0-20261130163803-0d798c7e1f2a+dirty (commit 0d798c7e1f2a, modified, 2026-11-30T16:38:03Z; go1.26.8)
//
// A part the binary does not record says so ("version unknown", "commit unknown"), so a bug
// report always says what is not known.
func VersionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "klt " + modulePath + " version unknown (commit unknown; built without module information)"
	}
	return formatVersion(bi)
}

// formatVersion formats bi as versionLine does.
func formatVersion(bi *debug.BuildInfo) string {
	path, version := bi.Main.Path, bi.Main.Version
	if path == "" {
		path = modulePath
	}
	switch version {
	case "":
		version = "version unknown"
	case "(devel)":
		version = "(devel)" // built from a directory without version control information
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var parts []string
	if rev == "" {
		parts = append(parts, "commit unknown")
	} else {
		parts = append(parts, "commit "+shortRev(rev))
		if modified {
			parts = append(parts, "modified")
		}
		if at != "" {
			parts = append(parts, at)
		}
	}
	goVersion := bi.GoVersion
	if goVersion == "" {
		goVersion = "go version unknown"
	}
	return "klt " + path + " " + version + " (" + strings.Join(parts, ", ") + "; " + goVersion + ")"
}

// shortRev shortens a commit hash to the 12 characters Go pseudo-versions use.
func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
