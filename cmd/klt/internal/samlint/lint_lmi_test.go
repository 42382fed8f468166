package samlint

import "testing"

// TestLMIRuntimes: the runtimes LMI runs (lambda-managed-instances-runtimes): Java 21+,
// Python 3.13+, Node.js 22+, .NET 8+, provided.al2023+; none other.
func TestLMIRuntimes(t *testing.T) {
	for rt, want := range map[string]bool{
		"java21": true, "java25": true, "java17": false,
		"python3.13": true, "python3.14": true, "python3.12": false, "python3.9": false,
		"nodejs22.x": true, "nodejs24.x": true, "nodejs20.x": false,
		"dotnet8": true, "dotnet10": true, "dotnet6": false,
		"provided.al2023": true, "provided.al2": false, "provided": false,
		"go1.x": false, "ruby3.3": false, "": false, "java21 ": false,
	} {
		if got := lmiRuntimeOK(rt); got != want {
			t.Errorf("lmiRuntimeOK(%q) = %v, want %v", rt, got, want)
		}
	}
}
