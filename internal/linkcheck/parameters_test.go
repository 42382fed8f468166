package linkcheck

import (
	"os"
	"path/filepath"
	"testing"
)

// maxSecretsProviderOverhead is how much larger a function that reads its secret through the
// Secrets Manager provider (testdata/secrets-provider, parameters/secrets) may be than the same
// function calling the SDK's Secrets Manager client itself (testdata/secrets-sdk): 128 KiB. It
// is 64 KiB (one arm64 segment page; 40 KB of code and data: the provider, the cache engine,
// singleflight). It was 1.13 MB while the three providers were one package, parameters, whose
// import linked the SSM client (its schemas package's initialisation alone is ~0.44 MB) with
// the Secrets Manager one.
//
// Built without lambda.norpc the figure is 0.4 MB: aws-lambda-go's net/rpc mode calls
// reflect's Method, and the linker then keeps every exported method of every type put in an
// interface, here all 84 of *secretsmanager.Client put in secrets.API (8 are linked when the
// client is called directly). Any interface over the client does that (producer's own did):
// build as sam build does, with the tag.
const maxSecretsProviderOverhead = 128 << 10

// Packages that a function reading only Secrets Manager values must not link: the SSM client
// and the providers it does not use.
var notForSecrets = []string{
	"github.com/aws/aws-sdk-go-v2/service/ssm",
	"github.com/aws/aws-sdk-go-v2/service/appconfig",
	"github.com/aws/aws-sdk-go-v2/service/appconfigdata",
	"github.com/kafkalambda/toolkit/parameters/paramstore",
	"github.com/kafkalambda/toolkit/parameters/appconfig",
}

// TestSecretsLinkNoSSM: a producer function with SCRAM from a secret (testdata/producer-scram),
// which reads its secret through parameters/secrets, and a function using that provider alone
// link no SSM or AppConfig code; both do link the provider (so that the check is seen to look
// at the right list).
func TestSecretsLinkNoSSM(t *testing.T) {
	t.Parallel()
	for _, fn := range []string{"producer-scram", "secrets-provider"} {
		d := deps(t, fn)
		for _, p := range notForSecrets {
			if l := linked(d, p); len(l) > 0 {
				t.Errorf("testdata/%s links %s: %v", fn, p, l)
			}
		}
		if len(linked(d, "github.com/kafkalambda/toolkit/parameters/secrets")) == 0 {
			t.Errorf("testdata/%s does not link parameters/secrets: is the check looking at the right list?", fn)
		}
	}
}

// TestSecretsProviderSize builds the functions as `sam build` would for arm64, prints their
// sizes, and holds the Secrets Manager provider to maxSecretsProviderOverhead over the SDK's
// client alone.
func TestSecretsProviderSize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	names := []string{"secrets-sdk", "secrets-provider", "producer-scram"}
	goCmd(t, lambdaEnv, append(append([]string{"build", "-o", dir + string(filepath.Separator)}, lambdaFlags...), pkgs(names...)...)...)
	size := map[string]int64{}
	for _, n := range names {
		st, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		size[n] = st.Size()
	}
	t.Logf("GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -tags=lambda.norpc -buildvcs=false\n"+
		"secrets-sdk (the SDK's GetSecretValue): %d bytes\nsecrets-provider (secrets.New + Get): %d bytes (%+d)\nproducer-scram (producer.WithSCRAMSecret + Produce): %d bytes",
		size["secrets-sdk"], size["secrets-provider"], size["secrets-provider"]-size["secrets-sdk"], size["producer-scram"])
	if d := size["secrets-provider"] - size["secrets-sdk"]; d > maxSecretsProviderOverhead {
		t.Errorf("parameters/secrets adds %d bytes to a function calling the Secrets Manager client itself, more than %d: does it link another provider's client again (see maxSecretsProviderOverhead)?", d, maxSecretsProviderOverhead)
	}
}
