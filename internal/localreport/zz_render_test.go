package localreport

import "testing"

func TestZZRender(t *testing.T) {
	if err := sampleReport().Write("/tmp/lrout"); err != nil {
		t.Fatal(err)
	}
}
