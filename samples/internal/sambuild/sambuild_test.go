package sambuild

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/internal/template"
)

// wantFunctions are the functions of template.yaml, each a main
// package under samples/.
var wantFunctions = []string{"ConsumerFunction", "DispatcherFunction", "ProducerFunction", "WorkerFunction"}

// function is what sam build reads of one AWS::Serverless::Function.
type function struct {
	id          string
	buildMethod string // Metadata.BuildMethod
	codeURI     string // Properties.CodeUri, else Globals
	runtime     string
	handler     string
	arch        string // the one entry of Architectures; x86_64 when absent, as Lambda's default
}

// machines maps a Lambda architecture to its GOARCH and ELF machine.
var machines = map[string]struct {
	goarch  string
	machine elf.Machine
}{
	"arm64":  {"arm64", elf.EM_AARCH64},
	"x86_64": {"amd64", elf.EM_X86_64},
}

// TestBuildTargets builds every function of template.yaml through its make target, as sam
// build does, and checks each bootstrap.
func TestBuildTargets(t *testing.T) {
	root := repoRoot(t)
	fns := readFunctions(t, filepath.Join(root, "template.yaml"))

	var ids []string
	for _, fn := range fns {
		ids = append(ids, fn.id)
	}
	if !slices.Equal(ids, wantFunctions) {
		t.Fatalf("template.yaml functions = %v, want %v", ids, wantFunctions)
	}

	scratch := t.TempDir()
	artifacts := t.TempDir()
	copied := map[string]string{} // CodeUri -> its scratch copy
	for _, fn := range fns {
		t.Run(fn.id, func(t *testing.T) {
			if fn.buildMethod != "makefile" {
				t.Fatalf("Metadata.BuildMethod = %q, want makefile", fn.buildMethod)
			}
			if fn.runtime != "provided.al2023" || fn.handler != "bootstrap" {
				t.Fatalf("Runtime, Handler = %q, %q; want provided.al2023, bootstrap", fn.runtime, fn.handler)
			}
			m, ok := machines[fn.arch]
			if !ok {
				t.Fatalf("Architectures = [%s]: not a Lambda architecture", fn.arch)
			}
			src := filepath.Join(root, filepath.FromSlash(fn.codeURI))
			work, ok := copied[fn.codeURI]
			if !ok {
				work = filepath.Join(scratch, fmt.Sprint(len(copied)))
				copySource(t, src, work)
				copied[fn.codeURI] = work
			}
			out := filepath.Join(artifacts, fn.id)
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			runMake(t, src, work, fn.id, "ARTIFACTS_DIR="+out)
			// ConsumerFunction is samples/consumer, and so on.
			pkg := "github.com/kafkalambda/toolkit/samples/" + strings.ToLower(strings.TrimSuffix(fn.id, "Function"))
			checkBootstrap(t, filepath.Join(out, "bootstrap"), pkg, m.goarch, m.machine)
		})
	}
}

// TestBuildTargetNeedsArtifactsDir: without ARTIFACTS_DIR a target fails and says so, rather
// than writing a bootstrap somewhere else.
func TestBuildTargetNeedsArtifactsDir(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command("make", "--makefile", filepath.Join(root, "Makefile"), "build-WorkerFunction")
	cmd.Dir = t.TempDir()
	cmd.Env = append(withoutEnv(os.Environ(), "ARTIFACTS_DIR"), "MAKEFLAGS=")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("make build-WorkerFunction without ARTIFACTS_DIR: err = %v, want a non-zero exit; output:\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("ARTIFACTS_DIR is not set")) {
		t.Fatalf("output does not name ARTIFACTS_DIR:\n%s", out)
	}
	if entries, _ := os.ReadDir(cmd.Dir); len(entries) != 0 {
		t.Fatalf("the target wrote %v in its working directory", entries)
	}
}

// repoRoot is the repository root, three levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return root
}

// runMake runs make as aws-lambda-builders' custom_make workflow does: the Makefile of the
// source, the target build-<id>, the scratch copy as working directory, and the caller's
// environment plus ARTIFACTS_DIR.
func runMake(t *testing.T, src, work, id string, env ...string) {
	t.Helper()
	cmd := exec.Command("make", "--makefile", filepath.Join(src, "Makefile"), "build-"+id)
	cmd.Dir = work
	// MAKEFLAGS cleared: when `make test` runs this test, make's own flags (-n, -k, -j ...)
	// are not sam's.
	cmd.Env = append(withoutEnv(os.Environ(), "ARTIFACTS_DIR"), append([]string{"MAKEFLAGS="}, env...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build-%s: %v\n%s", id, err, out)
	}
}

func withoutEnv(env []string, name string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
}

// checkBootstrap checks one build output: a regular executable file, a static ELF
// executable for goarch, stripped of symbols and DWARF, built for linux with the flags the
// Makefile promises and no VCS stamp, from the main package wantPath.
func checkBootstrap(t *testing.T, path, wantPath, goarch string, machine elf.Machine) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no bootstrap: %v", err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		t.Fatalf("bootstrap mode %v: want an executable regular file", st.Mode())
	}

	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("bootstrap is not ELF: %v", err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != machine || f.Type != elf.ET_EXEC {
		t.Errorf("ELF class %v, machine %v, type %v; want ELFCLASS64, %v, ET_EXEC", f.Class, f.Machine, f.Type, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("bootstrap has an interpreter (PT_INTERP): dynamically linked, so cgo was on")
		}
	}
	for _, s := range f.Sections {
		if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			t.Errorf("bootstrap has section %s: not stripped (-ldflags='-s -w')", s.Name)
		}
	}

	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatalf("build info: %v", err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
		if strings.HasPrefix(s.Key, "vcs") {
			t.Errorf("build setting %s=%s: built with VCS stamping (want -buildvcs=false, as in a copy without .git)", s.Key, s.Value)
		}
	}
	want := map[string]string{
		"GOOS":        "linux",
		"GOARCH":      goarch,
		"CGO_ENABLED": "0",
		"-tags":       "lambda.norpc",
		"-trimpath":   "true",
	}
	for k, v := range want {
		if settings[k] != v {
			t.Errorf("build setting %s = %q, want %q", k, settings[k], v)
		}
	}
	// -ldflags is not recorded under -trimpath; the section check above covers -s -w.
	if bi.Path != wantPath {
		t.Errorf("bootstrap is package %s, want %s", bi.Path, wantPath)
	}
}

// copySource copies the source directory as sam build's CopySourceAction does: everything
// but .git and .aws-sam. Symbolic links are copied as links.
func copySource(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".aws-sam") {
			return filepath.SkipDir
		}
		if d.Name() == ".git" { // a worktree's .git file
			return nil
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return copyFile(path, to, info.Mode().Perm())
		}
		return nil // sockets, pipes: nothing a build reads
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, ".git")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the copy has a .git (%v): sam build's copy has none", err)
	}
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// readFunctions reads the AWS::Serverless::Function resources of a template, sorted by
// logical ID, with the Globals they inherit. The properties read here must be plain values.
func readFunctions(t *testing.T, path string) []function {
	t.Helper()
	tpl, err := template.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var fns []function
	for _, r := range tpl.OfType(template.TypeFunction) {
		scalar := func(name string) string {
			n := tpl.Property(r, name)
			if n == nil {
				return ""
			}
			if !n.IsString() {
				t.Fatalf("%s: %s.%s is not a plain string", n.Pos, r.LogicalID, name)
			}
			return n.Text
		}
		fn := function{
			id:          r.LogicalID,
			codeURI:     scalar("CodeUri"),
			runtime:     scalar("Runtime"),
			handler:     scalar("Handler"),
			buildMethod: r.Metadata.Get("BuildMethod").String(),
			arch:        "x86_64",
		}
		if archs := tpl.Property(r, "Architectures"); archs != nil {
			if archs.Kind != template.Sequence || len(archs.Items) != 1 || !archs.Items[0].IsString() {
				t.Fatalf("%s: %s.Architectures is not a list of one name", archs.Pos, r.LogicalID)
			}
			fn.arch = archs.Items[0].Text
		}
		if fn.codeURI == "" {
			t.Fatalf("%s: %s has no CodeUri", r.Pos, r.LogicalID)
		}
		fns = append(fns, fn)
	}
	slices.SortFunc(fns, func(a, b function) int { return strings.Compare(a.id, b.id) })
	return fns
}
