package funcrun

import (
	"os"
	"strings"
	"testing"
)

// TestEmulatorVersionIsPinned: the emulator klt builds outside the toolkit's checkout is the
// version tools/go.mod pins, the one it builds inside.
func TestEmulatorVersionIsPinned(t *testing.T) {
	data, err := os.ReadFile("../../../../tools/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	module := strings.TrimSuffix(rieModule, "/cmd/aws-lambda-rie")
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == module {
			if f[1] != rieVersion {
				t.Errorf("tools/go.mod pins %s %s, klt installs %s", module, f[1], rieVersion)
			}
			return
		}
	}
	t.Fatalf("tools/go.mod does not require %s", module)
}
