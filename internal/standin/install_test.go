package standin

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// lockFile is the part of a package-lock.json (lockfileVersion 3) the tests compare.
type lockFile struct {
	LockfileVersion int `json:"lockfileVersion"`
	Packages        map[string]struct {
		Version      string            `json:"version"`
		Resolved     string            `json:"resolved"`
		Integrity    string            `json:"integrity"`
		Dependencies map[string]string `json:"dependencies"`
	} `json:"packages"`
}

func readLock(t *testing.T, data []byte) lockFile {
	t.Helper()
	var l lockFile
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestPinnedLockIsTheRepositorys: the lock klt installs from holds dynalite and local-aws-sqs
// at the versions the project tests (the repository's package-lock.json), and every package in
// it has the version, tarball and integrity hash of the repository's lock, so that npm ci
// installs exactly what make node_modules does.
func TestPinnedLockIsTheRepositorys(t *testing.T) {
	repoData, err := os.ReadFile("../../package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	repo, pinned := readLock(t, repoData), readLock(t, pinnedLock)
	if pinned.LockfileVersion != repo.LockfileVersion {
		t.Errorf("lockfileVersion %d, the repository's is %d", pinned.LockfileVersion, repo.LockfileVersion)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := json.Unmarshal(pinnedPackageJSON, &pkg); err != nil {
		t.Fatal(err)
	}
	if len(pkg.Dependencies) != 2 {
		t.Errorf("package.json dependencies %v, want dynalite and local-aws-sqs only", pkg.Dependencies)
	}
	for _, name := range []string{"dynalite", "local-aws-sqs"} {
		want := repo.Packages["node_modules/"+name]
		if want.Version == "" {
			t.Fatalf("the repository's lock has no %s", name)
		}
		if pkg.Dependencies[name] != want.Version || pinned.Packages[""].Dependencies[name] != want.Version {
			t.Errorf("%s: package.json %q, lock root %q, want the repository's %s", name, pkg.Dependencies[name], pinned.Packages[""].Dependencies[name], want.Version)
		}
	}
	for path, got := range pinned.Packages {
		if path == "" {
			continue
		}
		want, ok := repo.Packages[path]
		switch {
		case !ok:
			t.Errorf("%s is not in the repository's lock", path)
		case got.Version != want.Version || got.Resolved != want.Resolved || got.Integrity != want.Integrity:
			t.Errorf("%s: %s %s %s, the repository's lock has %s %s %s", path, got.Version, got.Resolved, got.Integrity, want.Version, want.Resolved, want.Integrity)
		case got.Integrity == "":
			t.Errorf("%s has no integrity hash", path)
		}
	}
	// Every dependency of a pinned package is pinned too (npm ci would refuse the lock).
	for path, p := range pinned.Packages {
		for dep := range p.Dependencies {
			if !resolvable(pinned, path, dep) {
				t.Errorf("%s depends on %s, which the pinned lock does not hold", path, dep)
			}
		}
	}
}

// resolvable reports whether dep, required by the package at path, is in the lock, as node
// resolves it (path's own node_modules, then each enclosing one).
func resolvable(l lockFile, path, dep string) bool {
	for base := path; ; {
		cand := "node_modules/" + dep
		if base != "" {
			cand = base + "/node_modules/" + dep
		}
		if _, ok := l.Packages[cand]; ok {
			return true
		}
		if base == "" {
			return false
		}
		if i := strings.LastIndex(base, "/node_modules/"); i >= 0 {
			base = base[:i]
		} else {
			base = ""
		}
	}
}

// TestInstallIntoEmptyCache: outside any Go module (so not in the toolkit's checkout), with an
// empty cache, two servers started at once install the pinned packages once (npm ci from the
// embedded lock, against the npm registry) and run from them; nothing half-done is left
// beside the installation.
func TestInstallIntoEmptyCache(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv(NodeModulesEnv, "")
	cache := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), InstallTimeout+StartTimeout)
	defer cancel()

	start := time.Now()
	var wg sync.WaitGroup
	var ddb *DynamoDB
	var q *SQS
	var ddbErr, sqsErr error
	wg.Go(func() { ddb, ddbErr = StartDynamoDB(ctx, WithCacheDir(cache)) })
	wg.Go(func() { q, sqsErr = StartSQS(ctx, WithCacheDir(cache)) })
	wg.Wait()
	if ddbErr != nil || sqsErr != nil {
		t.Fatalf("StartDynamoDB: %v\nStartSQS: %v", ddbErr, sqsErr)
	}
	defer ddb.Stop()
	defer q.Stop()
	t.Logf("installed and started in %v", time.Since(start).Round(time.Millisecond))
	if _, err := ddb.Client().ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Client().ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "node-servers", lockKey())
	if err := holdsServers(filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ddb.proc.script, dir+string(filepath.Separator)) {
		t.Errorf("dynalite runs %s, want it from %s", ddb.proc.script, dir)
	}
	if !strings.HasPrefix(q.proc.script, dir+string(filepath.Separator)) {
		t.Errorf("local-aws-sqs runs %s, want it from %s", q.proc.script, dir)
	}
	entries, err := os.ReadDir(filepath.Join(cache, "node-servers"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != lockKey() {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the cache holds %v, want only %s (no temporary directory, no lock)", names, lockKey())
	}

	// Installed: the next start does not need npm.
	t.Setenv("PATH", nodeOnlyPath(t))
	again, err := StartDynamoDB(ctx, WithCacheDir(cache))
	if err != nil {
		t.Fatalf("from the installed cache, without npm: %v", err)
	}
	again.Stop()
}

// nodeOnlyPath returns a PATH that holds node and nothing else.
func nodeOnlyPath(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(node, filepath.Join(bin, "node")); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestNamedNodeModules: the node_modules directory KLT_NODE_MODULES (or WithNodeModules) names
// is the one the servers run from, outside the toolkit's checkout and without installing
// anything; one that lacks a server is an error naming the variable, never a fall back to
// another place.
func TestNamedNodeModules(t *testing.T) {
	checkout, ok := toolkitCheckout()
	if !ok {
		t.Fatal("the test runs in the toolkit's checkout")
	}
	real := filepath.Join(checkout, "node_modules")
	if err := holdsServers(real); err != nil {
		t.Fatalf("the checkout's node_modules: %v; %s", err, InstallHint)
	}
	// A directory of its own, whose packages are links to the checkout's.
	named := filepath.Join(t.TempDir(), "node_modules")
	for _, p := range []string{"dynalite", "local-aws-sqs"} {
		if err := os.MkdirAll(named, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(real, p), filepath.Join(named, p)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(t.TempDir())
	cache := t.TempDir()
	t.Setenv(NodeModulesEnv, named)
	t.Setenv("PATH", nodeOnlyPath(t)) // no npm: nothing may be installed
	ctx, cancel := context.WithTimeout(context.Background(), 2*StartTimeout)
	defer cancel()

	ddb, err := StartDynamoDB(ctx, WithCacheDir(cache))
	if err != nil {
		t.Fatal(err)
	}
	defer ddb.Stop()
	if want := filepath.Join(named, "dynalite", "cli.js"); ddb.proc.script != want {
		t.Errorf("dynalite runs %s, want %s", ddb.proc.script, want)
	}
	q, err := StartSQS(ctx, WithCacheDir(cache))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Stop()
	if _, err := q.Client().ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cache, "node-servers", lockKey())); !os.IsNotExist(err) {
		t.Errorf("the cache has an installation (%v): the named directory was not used alone", err)
	}

	// The option wins over the variable; a directory without the servers is an error.
	empty := t.TempDir()
	_, err = StartDynamoDB(ctx, WithCacheDir(cache), WithNodeModules(empty))
	if err == nil || !strings.Contains(err.Error(), "WithNodeModules="+empty) || !strings.Contains(err.Error(), "dynalite is not installed there") {
		t.Errorf("WithNodeModules(empty dir): %v, want an error naming it and dynalite", err)
	}
	t.Setenv(NodeModulesEnv, empty)
	_, err = StartSQS(ctx, WithCacheDir(cache))
	if err == nil || !strings.Contains(err.Error(), NodeModulesEnv+"="+empty) {
		t.Errorf("%s=empty dir: %v, want an error naming the variable", NodeModulesEnv, err)
	}
}

// TestNoNpm: with no installation anywhere and no npm, the error says what to install and which
// variable to set instead.
func TestNoNpm(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv(NodeModulesEnv, "")
	t.Setenv("PATH", nodeOnlyPath(t))
	_, err := StartDynamoDB(context.Background(), WithCacheDir(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "npm not found on PATH") || !strings.Contains(err.Error(), NodeModulesEnv+"=DIR") {
		t.Fatalf("got %v, want an error naming npm and %s", err, NodeModulesEnv)
	}
}

// TestInstallLock: a lock held by a live process is waited for (until the deadline); one whose
// owner is gone is taken over.
func TestInstallLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := lockInstall(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := lockInstall(ctx, path); err == nil || !strings.Contains(err.Error(), "another process is installing") {
		t.Errorf("a second lock while this process holds it: %v, want a wait ending in an error", err)
	}
	unlock()
	if err := os.WriteFile(path, []byte("999999999\n"), 0o644); err != nil { // no such process
		t.Fatal(err)
	}
	unlock, err = lockInstall(context.Background(), path)
	if err != nil {
		t.Fatalf("an abandoned lock: %v", err)
	}
	unlock()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("unlock left the lock file (%v)", err)
	}
}

// TestRegistryUnreachable: when npm cannot reach the registry (here a closed port, with an
// empty npm cache and no retries), the install fails within its bound, with npm's words, the
// variable to set instead, and no half-installed cache.
func TestRegistryUnreachable(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv(NodeModulesEnv, "")
	t.Setenv("npm_config_registry", "http://127.0.0.1:9/")
	t.Setenv("npm_config_cache", t.TempDir())
	t.Setenv("npm_config_fetch_retries", "0")
	cache := t.TempDir()
	start := time.Now()
	_, err := StartDynamoDB(context.Background(), WithCacheDir(cache))
	if err == nil || !strings.Contains(err.Error(), "with npm ci into") || !strings.Contains(err.Error(), "ECONNREFUSED") ||
		!strings.Contains(err.Error(), "set "+NodeModulesEnv+"=DIR") {
		t.Fatalf("got %v, want npm's connection error and %s", err, NodeModulesEnv)
	}
	t.Logf("failed after %v", time.Since(start).Round(time.Millisecond))
	entries, _ := os.ReadDir(filepath.Join(cache, "node-servers"))
	if len(entries) != 0 {
		t.Errorf("the cache holds %d entries after a failed install, want none", len(entries))
	}
}
