package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// kafkaeventFixtures returns the Kafka events other projects wrote, which kafkaevent's tests
// keep under kafkaevent/testdata/fixtures, one directory per project.
func kafkaeventFixtures(t *testing.T) []string {
	t.Helper()
	var files []string
	root := filepath.Join("..", "..", "kafkaevent", "testdata", "fixtures")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no fixture events under %s", root)
	}
	return files
}

func TestDecodeThenBuildRealFixtures(t *testing.T) {
	// Whatever "klt event decode" prints, "klt event build" takes back, for the events other
	// projects wrote as much as for ours: records without timestampType, offsets repeated
	// within a partition, schema metadata without an id, byte order marks. Build makes the
	// records decode printed, field by field. A record decode reports malformed is the one
	// thing build refuses, and it says why.
	files := append(fixtureEvents(t), kafkaeventFixtures(t)...)
	rejected := 0
	for _, file := range files {
		name := strings.TrimPrefix(file, filepath.Join("..", "..")+string(filepath.Separator))
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want, err := kafkaevent.Parse(input.TrimBOM(data))
			if err != nil {
				rejected++
				t.Logf("not round-tripped: kafkaevent.Parse rejects it: %v", err)
				return
			}
			d := klt(t, "", "event", "decode", file)
			malformed := 0
			for r := range want.All() {
				if r.Err != nil {
					malformed++
				}
			}
			if malformed > 0 {
				if d.code != base.ExitFail {
					t.Fatalf("decode of an event with %d malformed records: exit %d", malformed, d.code)
				}
				b := klt(t, d.stdout, "event", "build")
				if b.code != base.ExitFail || strings.Count(b.stderr, "record carries a decode error") != malformed {
					t.Errorf("build of decode's output with %d malformed records: exit %d, stderr:\n%s", malformed, b.code, b.stderr)
				}
				return
			}
			if d.code != base.ExitOK || d.stderr != "" {
				t.Fatalf("decode: exit %d, stderr %q", d.code, d.stderr)
			}
			flags := envelopeFlags(want)
			b := klt(t, d.stdout, append([]string{"event", "build"}, flags...)...)
			if b.code != base.ExitOK {
				t.Fatalf("build %s: exit %d, stderr:\n%s\ninput:\n%s", strings.Join(flags, " "), b.code, b.stderr, d.stdout)
			}
			got, err := kafkaevent.Parse([]byte(b.stdout))
			if err != nil {
				t.Fatalf("Parse of build's event: %v\n%s", err, b.stdout)
			}
			var gotRecs, wantRecs []*kafkaevent.Record
			for r := range got.All() {
				gotRecs = append(gotRecs, r)
			}
			for r := range want.All() {
				wantRecs = append(wantRecs, r)
			}
			if len(gotRecs) != len(wantRecs) {
				t.Fatalf("%d records, want %d", len(gotRecs), len(wantRecs))
			}
			for i := range wantRecs {
				for _, diff := range recordDiffs(gotRecs[i], wantRecs[i]) {
					t.Errorf("record %d (%s@%d): %s", i, wantRecs[i].PartitionID(), wantRecs[i].Offset, diff)
				}
			}
			if again := klt(t, b.stdout, "event", "decode"); again.stdout != d.stdout {
				t.Errorf("decode of the rebuilt event printed\n%s\nwant\n%s", again.stdout, d.stdout)
			}
		})
	}
	t.Logf("%d of %d fixtures round-tripped; %d rejected by kafkaevent.Parse", len(files)-rejected, len(files), rejected)
}
