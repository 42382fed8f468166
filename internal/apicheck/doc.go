// Package apicheck holds no code: its test keeps the exported API of every public package of
// the repository (every module's, commands and internal packages aside) in a checked-in file
// under api/, one line per exported name, as the Go repository's api/ files do. A change to a
// public name fails the test until the file says it too, so that no rename, removal or
// addition reaches users unseen; CHANGELOG.md says what to write instead.
//
// After a deliberate change, rewrite the files and review their diff:
//
//	go test ./internal/apicheck -update
//	git diff api/
package apicheck
