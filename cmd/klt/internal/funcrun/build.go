package funcrun

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/esm/samspec"
	"github.com/kafkalambda/toolkit/internal/template"
)

// The Runtime Interface Emulator: its package, and the version tools/go.mod pins (a test
// checks that they agree), which klt builds with go install outside the toolkit's checkout.
const (
	rieModule  = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
	rieVersion = "v0.0.0-20261030222936-bef5c4ba774d"
)

// toolkitModule is the module path of the toolkit's go.mod.
const toolkitModule = "github.com/kafkalambda/toolkit"

// BuildEmulator builds aws-lambda-rie into dir: inside the toolkit's checkout, as its
// tools/go.mod pins it (go build -modfile=tools/go.mod); anywhere else, the same version with
// go install (module download through GOPROXY, or the module cache).
func BuildEmulator(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "aws-lambda-rie")
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	var cmd *exec.Cmd
	var what string
	if root, ok := toolkitCheckout(); ok {
		modfile := filepath.Join(root, "tools", "go.mod")
		cmd = exec.CommandContext(ctx, GoCommand(), "build", "-modfile="+modfile, "-o", out, rieModule)
		cmd.Dir = root
		// GOWORK=off: the checkout's go.work would refuse -modfile (workspace mode).
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
		what = "GOWORK=off go build -modfile=tools/go.mod " + rieModule
	} else {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", err
		}
		cmd = exec.CommandContext(ctx, GoCommand(), "install", rieModule+"@"+rieVersion)
		cmd.Dir = abs
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOBIN="+abs, "GOFLAGS=", "GOOS=", "GOARCH=")
		what = "go install " + rieModule + "@" + rieVersion
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the Runtime Interface Emulator (%s): %v\n%s\n(or give --emulator a built aws-lambda-rie)", what, err, strings.TrimSpace(string(msg)))
	}
	return out, nil
}

// toolkitCheckout returns the root of the toolkit's checkout around the working directory
// (the nearest directory above it whose go.mod is the toolkit's module, with tools/go.mod).
func toolkitCheckout() (string, bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for dir := wd; ; {
		if isModule(filepath.Join(dir, "go.mod"), toolkitModule) {
			if _, err := os.Stat(filepath.Join(dir, "tools", "go.mod")); err == nil {
				return dir, true
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// isModule reports whether the go.mod file at path declares module mod.
func isModule(path, mod string) bool {
	data, err := input.ReadFileCapped(path, input.SourceLimit)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == mod
		}
	}
	return false
}

// BuildBootstrap builds the function's bootstrap for this machine into dir and returns its
// path, the way sam build builds it for the function's Metadata.BuildMethod, for the host's
// GOOS and GOARCH:
//
//   - makefile: `make build-<LogicalId>` in the CodeUri directory, with ARTIFACTS_DIR=dir in
//     the environment and GOOS, GOARCH and LAMBDA_ARCH of the host on the make command line;
//     the target must leave dir/bootstrap. Also when the CodeUri holds a main package: the
//     Makefile says how (tags, flags, a generate step).
//   - go1.x: go build of the CodeUri directory (in its own module when it has a go.mod, else
//     in the module around it), CGO_ENABLED=0, -tags lambda.norpc, -trimpath, stripped.
//   - none, with a CodeUri that is a Go main package: built as go1.x (sam build would copy the
//     directory as it is and expect a bootstrap there).
//
// Any other BuildMethod, or a Runtime that is not an OS-only runtime (provided.al2023,
// provided.al2, provided) or go1.x, is an error that says what sam build would do.
func BuildBootstrap(ctx context.Context, f *samspec.FunctionSpec, dir string, logs io.Writer) (string, error) {
	if err := checkRuntime(f); err != nil {
		return "", err
	}
	// The logical ID becomes a make target and a directory's name: only a CloudFormation
	// logical ID (alphanumeric, as template.Read checks) is read by make and by paths as a
	// name and nothing more ("x:=..." would be a make assignment, "Fn/../.." a path).
	if !template.IsLogicalID(f.LogicalID) {
		return "", fmt.Errorf("%q is not a logical ID CloudFormation takes (A-Za-z0-9, at most %d characters): klt builds no function by that name", f.LogicalID, template.MaxLogicalID)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "bootstrap")
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	if st, err := os.Stat(f.CodeURI); err != nil {
		return "", fmt.Errorf("CodeUri: %v", err)
	} else if !st.IsDir() {
		return "", fmt.Errorf("CodeUri %s is not a directory: klt builds a directory's Go code (a .zip is deployed as it is)", f.CodeURI)
	}
	hostEnv := append(os.Environ(), "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	var cmd *exec.Cmd
	var what string
	switch f.BuildMethod {
	case "makefile":
		mk := filepath.Join(f.CodeURI, "Makefile")
		if _, err := os.Stat(mk); err != nil {
			return "", fmt.Errorf("%s: BuildMethod makefile, but %v: sam build runs `make build-%s` from the Makefile of the CodeUri directory", f.LogicalID, err, f.LogicalID)
		}
		target := "build-" + f.LogicalID
		cmd = exec.CommandContext(ctx, "make", "--no-print-directory", "--makefile", mk, target,
			"ARTIFACTS_DIR="+dir, "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "LAMBDA_ARCH="+runtime.GOARCH)
		what = "make " + target
	case "go1.x", "":
		if f.BuildMethod == "" {
			isMain, err := invokeMainDir(f.CodeURI)
			if err != nil {
				return "", fmt.Errorf("CodeUri: %w", err)
			}
			if !isMain {
				return "", fmt.Errorf("%s: CodeUri %s is not a Go main package, and the function has no Metadata BuildMethod: sam build would copy the directory as it is, as code built before; klt builds Go code with BuildMethod makefile or go1.x", f.LogicalID, f.CodeURI)
			}
		}
		cmd = exec.CommandContext(ctx, GoCommand(), "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
		what = "go build of " + f.CodeURI
	default:
		return "", fmt.Errorf("%s: Metadata BuildMethod %q: sam build would run its %s builder; klt builds Go functions only, with BuildMethod makefile (make build-%s) or go1.x (go build)", f.LogicalID, f.BuildMethod, f.BuildMethod, f.LogicalID)
	}
	cmd.Dir = f.CodeURI
	cmd.Env = append(hostEnv, "ARTIFACTS_DIR="+dir)
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		return "", fmt.Errorf("build failed: %s: %v\n%s", what, err, strings.TrimSpace(msg.String()))
	}
	if err := checkHostBinary(out); err != nil {
		return "", fmt.Errorf("%s: %v", what, err)
	}
	return out, nil
}

// checkRuntime refuses a Runtime whose code is not a bootstrap klt can build.
func checkRuntime(f *samspec.FunctionSpec) error {
	switch f.Runtime {
	case "", "provided.al2023", "provided.al2", "provided", "go1.x":
		return nil
	}
	return fmt.Errorf("%s: Runtime %s: sam build would build it with that runtime's builder; klt builds and runs Go functions on an OS-only runtime (provided.al2023, provided.al2) only", f.LogicalID, f.Runtime)
}

// invokeMainDir reports whether dir holds Go files of package main. A Go file it cannot read
// (or one over sourceLimit) is an error, not a "no": the build would then take another way.
func invokeMainDir(dir string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return false, err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := input.ReadFileCapped(f, input.SourceLimit)
		if err != nil {
			return false, err
		}
		if bytes.Contains(data, []byte("\npackage main\n")) || bytes.HasPrefix(data, []byte("package main\n")) {
			return true, nil
		}
	}
	return false, nil
}

// checkHostBinary checks that path is an executable this machine runs: an ELF file of its
// architecture.
func checkHostBinary(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("no bootstrap for this machine at %s: %v", path, err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "riscv64": elf.EM_RISCV}[runtime.GOARCH]
	if want != 0 && f.Machine != want {
		return fmt.Errorf("bootstrap is built for %v, not for this machine's %s: let the make target take GOARCH from the make command line (GOARCH ?= arm64)", f.Machine, runtime.GOARCH)
	}
	return nil
}

// GoCommand returns the go command to build with: "go" from PATH (go run and go test put
// their toolchain's first).
func GoCommand() string { return "go" }
