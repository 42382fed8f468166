package standin

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// NodeModulesEnv is the environment variable that names a node_modules directory holding
// dynalite and local-aws-sqs: the servers run from there, and nothing is installed. klt's
// commands that start the servers document it.
const NodeModulesEnv = "KLT_NODE_MODULES"

// InstallTimeout bounds the installation of the pinned packages into the cache (npm ci,
// including the wait for another process installing them at the same time).
const InstallTimeout = 5 * time.Minute

// toolkitModule is the module path of the toolkit's go.mod: inside its checkout, the
// checkout's own node_modules (make node_modules) is used.
const toolkitModule = "github.com/kafkalambda/toolkit"

// The package.json and package-lock.json klt installs the servers from: dynalite and
// local-aws-sqs at the versions of the repository's package-lock.json, with their
// dependencies' versions and integrity hashes copied from it (install_test.go checks that
// they agree). npm ci checks every tarball against those hashes.
var (
	//go:embed npm/package.json
	pinnedPackageJSON []byte
	//go:embed npm/package-lock.json
	pinnedLock []byte
	//go:embed server.cjs
	sqsLauncher []byte
)

// NodeOption says where [StartDynamoDB] and [StartSQS] find the Node.js servers.
type NodeOption func(*nodeConfig)

type nodeConfig struct {
	modules string // a node_modules directory named by the caller or NodeModulesEnv
	from    string // what named it, for messages
	cache   string // the cache root; "" = os.UserCacheDir()/klt
}

// WithNodeModules runs the servers from dir, a node_modules directory holding dynalite and
// local-aws-sqs (as [NodeModulesEnv] does; the option wins over the variable).
func WithNodeModules(dir string) NodeOption {
	return func(c *nodeConfig) { c.modules, c.from = dir, "WithNodeModules" }
}

// WithCacheDir installs the pinned packages under dir instead of os.UserCacheDir()/klt.
func WithCacheDir(dir string) NodeOption {
	return func(c *nodeConfig) { c.cache = dir }
}

// nodeServers is where the servers run from.
type nodeServers struct {
	node      string   // the node executable
	modules   string   // the node_modules directory holding dynalite and local-aws-sqs
	sqsScript string   // the launcher of local-aws-sqs (server.cjs)
	env       []string // added to the servers' environment (NODE_PATH for a named directory)
}

// locateServers finds node and the servers, in this order: the directory [WithNodeModules] or
// [NodeModulesEnv] names (it must hold both packages: no other place is tried); the
// node_modules of the toolkit's checkout around the working directory, when it holds them
// (make node_modules); else the pinned packages in the cache, installed on first use.
func locateServers(ctx context.Context, opts []NodeOption) (*nodeServers, error) {
	var c nodeConfig
	for _, o := range opts {
		o(&c)
	}
	if c.modules == "" {
		if v := os.Getenv(NodeModulesEnv); v != "" {
			c.modules, c.from = v, NodeModulesEnv
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node (Node.js >= 20) not found on PATH: %v; klt runs dynalite and local-aws-sqs with it: install Node.js (with npm), then %s", err, InstallHint)
	}
	s := &nodeServers{node: node}
	if c.modules != "" {
		dir, err := filepath.Abs(c.modules)
		if err != nil {
			return nil, err
		}
		if err := holdsServers(dir); err != nil {
			return nil, fmt.Errorf("%s=%s: %v; name a node_modules directory holding dynalite and local-aws-sqs (npm install %s)", c.from, c.modules, err, pinnedSpecs())
		}
		launcher, err := writeLauncher(c.cache)
		if err != nil {
			return nil, err
		}
		s.modules, s.sqsScript, s.env = dir, launcher, []string{"NODE_PATH=" + dir}
		return s, nil
	}
	if root, ok := toolkitCheckout(); ok {
		dir := filepath.Join(root, "node_modules")
		script := filepath.Join(root, "internal", "standin", "server.cjs")
		if holdsServers(dir) == nil {
			if _, err := os.Stat(script); err == nil {
				s.modules, s.sqsScript = dir, script
				return s, nil
			}
		}
	}
	dir, err := installPinned(ctx, c.cache)
	if err != nil {
		return nil, err
	}
	s.modules, s.sqsScript = filepath.Join(dir, "node_modules"), filepath.Join(dir, "server.cjs")
	return s, nil
}

// holdsServers checks that the node_modules directory dir holds dynalite and local-aws-sqs.
func holdsServers(dir string) error {
	for _, f := range []string{"dynalite/cli.js", "local-aws-sqs/package.json"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); err != nil {
			return fmt.Errorf("%s is not installed there (%v)", strings.Split(f, "/")[0], err)
		}
	}
	return nil
}

// toolkitCheckout returns the root of the toolkit's checkout around the working directory: the
// nearest directory above it whose go.mod is the toolkit's module.
func toolkitCheckout() (string, bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for dir := wd; ; {
		if isToolkitRoot(dir) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// isToolkitRoot reports whether dir/go.mod declares the toolkit's module.
func isToolkitRoot(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == toolkitModule
		}
	}
	return false
}

// lockKey is the cache key of the pinned packages: a hash of the embedded package.json and
// lock, so that a klt with other versions installs into another directory.
func lockKey() string {
	h := sha256.New()
	h.Write(pinnedPackageJSON)
	h.Write([]byte{0})
	h.Write(pinnedLock)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// pinnedSpecs returns "dynalite@V local-aws-sqs@V" of the embedded package.json.
func pinnedSpecs() string {
	var p struct{ Dependencies map[string]string }
	if err := json.Unmarshal(pinnedPackageJSON, &p); err != nil {
		return "dynalite local-aws-sqs"
	}
	return "dynalite@" + p.Dependencies["dynalite"] + " local-aws-sqs@" + p.Dependencies["local-aws-sqs"]
}

// cacheRoot returns dir, or os.UserCacheDir()/klt when dir is "".
func cacheRoot(dir string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	ucd, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory to install dynalite and local-aws-sqs into (%v): set %s=DIR to a node_modules directory holding them (npm install %s)", err, NodeModulesEnv, pinnedSpecs())
	}
	return filepath.Join(ucd, "klt"), nil
}

// installPinned returns the directory of the pinned packages in the cache (ROOT/node-servers/
// KEY, holding node_modules and server.cjs), installing them first when they are not there:
// npm ci from the embedded package.json and lock into a temporary directory beside it, renamed
// into place once complete, so that a killed install never leaves a half-installed cache. A
// lock file keeps two processes from installing at once; the whole is bounded by
// [InstallTimeout].
func installPinned(ctx context.Context, cache string) (string, error) {
	root, err := cacheRoot(cache)
	if err != nil {
		return "", err
	}
	parent := filepath.Join(root, "node-servers")
	key := lockKey()
	final := filepath.Join(parent, key)
	if holdsServers(filepath.Join(final, "node_modules")) == nil {
		return final, nil
	}
	ctx, cancel := context.WithTimeout(ctx, InstallTimeout)
	defer cancel()
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("installing dynalite and local-aws-sqs: %w; or set %s=DIR to a node_modules directory holding them", err, NodeModulesEnv)
	}
	unlock, err := lockInstall(ctx, final+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if holdsServers(filepath.Join(final, "node_modules")) == nil { // another process installed them
		return final, nil
	}
	if err := npmCI(ctx, parent, key, final); err != nil {
		return "", err
	}
	return final, nil
}

// npmCI installs the pinned packages into a temporary directory of parent and renames it to
// final. Temporary directories of earlier installs that were killed are removed first (the
// caller holds the lock: no other install is running).
func npmCI(ctx context.Context, parent, key, final string) error {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("npm not found on PATH (%v): klt installs dynalite and local-aws-sqs with npm ci on first use; install npm (it comes with Node.js), or set %s=DIR to a node_modules directory holding them (npm install %s)", err, NodeModulesEnv, pinnedSpecs())
	}
	if old, _ := filepath.Glob(filepath.Join(parent, key+".tmp-*")); len(old) > 0 {
		for _, d := range old {
			_ = os.RemoveAll(d)
		}
	}
	tmp, err := os.MkdirTemp(parent, key+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // after the rename, there is nothing left to remove
	for name, data := range map[string][]byte{"package.json": pinnedPackageJSON, "package-lock.json": pinnedLock, "server.cjs": sqsLauncher} {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	cmd.WaitDelay = 5 * time.Second
	out := &logBuffer{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (not done within %v)", err, InstallTimeout)
		}
		return fmt.Errorf("installing %s with npm ci into %s failed: %v\n%s\nklt installs them from the npm registry on first use; if it cannot reach it, install them yourself and set %s=DIR to that node_modules directory",
			pinnedSpecs(), parent, err, strings.TrimSpace(out.String()), NodeModulesEnv)
	}
	if err := holdsServers(filepath.Join(tmp, "node_modules")); err != nil {
		return fmt.Errorf("npm ci in %s: %v", tmp, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		if holdsServers(filepath.Join(final, "node_modules")) == nil {
			return nil // installed by a process that took a lock it judged stale: the same files
		}
		return fmt.Errorf("installing dynalite and local-aws-sqs: %w", err)
	}
	return nil
}

// lockInstall takes the install lock path (a file created exclusively, holding the owner's
// pid), waiting while another live process holds it, until ctx ends. A lock whose owner is
// gone (killed during its install) is taken over.
func lockInstall(ctx context.Context, path string) (unlock func(), err error) {
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d\n", os.Getpid())
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("install lock: %w", err)
		}
		if lockAbandoned(path) {
			_ = os.Remove(path)
			continue
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("another process is installing dynalite and local-aws-sqs (lock %s) and did not finish within %v: wait, or remove the lock if no klt is running: %w", path, InstallTimeout, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// lockAbandoned reports whether the lock file's owner is no longer running, or the lock is
// older than an install may take.
func lockAbandoned(path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false // removed meanwhile: the next attempt creates it
	}
	if time.Since(st.ModTime()) > InstallTimeout+time.Minute {
		return true
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		// Being written (created, pid not yet there), or damaged: judged by its age alone.
		return time.Since(st.ModTime()) > 10*time.Second
	}
	return !processAlive(pid)
}

// processAlive reports whether a process pid runs (on Windows, whether it exists).
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	if runtime.GOOS == "windows" {
		return true
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// writeLauncher writes the embedded server.cjs into the cache (ROOT/node-servers/launcher-
// HASH.cjs) for servers run from a named node_modules directory, and returns its path.
func writeLauncher(cache string) (string, error) {
	root, err := cacheRoot(cache)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(sqsLauncher)
	path := filepath.Join(root, "node-servers", "launcher-"+hex.EncodeToString(sum[:8])+".cjs")
	if data, err := os.ReadFile(path); err == nil && bytes.Equal(data, sqsLauncher) {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("writing the local-aws-sqs launcher: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "launcher-*.tmp")
	if err != nil {
		return "", fmt.Errorf("writing the local-aws-sqs launcher: %w", err)
	}
	_, werr := f.Write(sqsLauncher)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("writing the local-aws-sqs launcher: %w", werr)
	}
	return path, nil
}
