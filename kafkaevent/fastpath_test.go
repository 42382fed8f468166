package kafkaevent_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// agree checks that Parse, which reads records in Lambda's own form on a fast path, gives
// exactly what the general path gives, and that it gives the same with base64 decoded by the
// plain Go code alone as with the vector code this machine runs.
func agree(t *testing.T, data []byte) {
	t.Helper()
	fast, err1 := kafkaevent.Parse(data)
	general, err2 := kafkaevent.ParseGeneral(data)
	if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
		t.Fatalf("errors differ:\nfast:    %v\ngeneral: %v\ninput: %.300s", err1, err2, data)
	}
	if !reflect.DeepEqual(fast, general) {
		t.Fatalf("events differ:\nfast:    %+v\ngeneral: %+v\ninput: %.300s", fast, general, data)
	}
	plain, err3 := kafkaevent.ParseNoSIMD(data)
	if (err1 == nil) != (err3 == nil) || err1 != nil && err1.Error() != err3.Error() {
		t.Fatalf("errors differ:\nvector base64: %v\nplain Go base64: %v\ninput: %.300s", err1, err3, data)
	}
	if !reflect.DeepEqual(fast, plain) {
		t.Fatalf("events differ:\nvector base64: %+v\nplain Go base64: %+v\ninput: %.300s", fast, plain, data)
	}
}

func TestRecordFastAgrees(t *testing.T) {
	agree(t, largeEvent())
	files, _ := filepath.Glob("../testdata/events/*.json")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		agree(t, data)
	}
	r := rand.New(rand.NewPCG(3, 5))
	for i := 0; i < 500; i++ {
		agree(t, randomEvent(r))
	}
	// Every way a record can leave the fast path midway: the general path must start over
	// cleanly (no header, key or value left from the attempt).
	base := `{"topic":"orders","partition":0,"offset":7,"timestamp":1700000000123,"timestampType":"CREATE_TIME","key":"azE=","value":"djE=","headers":[{"a":[1]},{"b":[2]}]}`
	for _, variant := range []string{
		base,
		strings.Replace(base, `"headers":[{"a":[1]},{"b":[2]}]`, `"headers":[{"a":[1]},{"b":[300]}]`, 1),
		strings.Replace(base, `"headers":[{"a":[1]},{"b":[2]}]`, `"headers":[{"a":[1]},{"b":[2]}],"extra":1`, 1),
		strings.Replace(base, `"value":"djE="`, `"value":"dj\u0045="`, 1),
		strings.Replace(base, `"value":"djE="`, `"value":"!!"`, 1),
		strings.Replace(base, `"value":"djE="`, `"value":null`, 1),
		strings.Replace(base, `"timestamp":1700000000123`, `"timestamp":-1`, 1),
		strings.Replace(base, `"timestampType":"CREATE_TIME"`, `"timestampType":"OTHER"`, 1),
		strings.Replace(base, `"partition":0`, `"partition":"0"`, 1),
		strings.Replace(base, `"offset":7`, `"offset": 7`, 1),
		strings.Replace(base, `"offset":7,`, ``, 1) + `]}}`, // missing offset: an error on both paths
		strings.Replace(base, `{"topic"`, `{ "topic"`, 1),
		strings.Replace(base, `"key":"azE=",`, ``, 1),
	} {
		agree(t, []byte(msk(variant, base)))
	}
	// Schema metadata, which a mapping with a schema registry writes on every record, read on
	// the fast path, and every way it can send the record to the general path.
	for _, meta := range []string{
		`"valueSchemaMetadata":{"dataFormat":"AVRO","schemaId":"42"}`,
		`"keySchemaMetadata":{"dataFormat":"JSON","schemaId":"1"},"valueSchemaMetadata":{"dataFormat":"AVRO","schemaId":"42"}`,
		`"valueSchemaMetadata":null`,
		`"valueSchemaMetadata":{"dataFormat":"PROTOBUF","schemaId":17}`,
		`"valueSchemaMetadata":{"dataFormat":"AVRO","schemaId":"a\u0062c"}`,
		`"valueSchemaMetadata":{"dataFormat":"AVRO","schemaId":"1","extra":[1,{"x":2}]}`,
		`"valueSchemaMetadata":{"dataFormat":"AVRO","dataFormat":"JSON"}`,
		`"valueSchemaMetadata":{"dataFormat":true}`,
		`"valueSchemaMetadata":"AVRO"`,
		`"valueSchemaMetadata":{"dataFormat":"AVRO"},"valueSchemaMetadata":{"dataFormat":"AVRO"}`,
		`"valueSchemaMetadata":{"dataFormat":"AVRO"},"headers":[{"a":[300]}]`,
		`"valueSchemaMetadataX":{"dataFormat":"AVRO"}`,
		`"valueSchema":{"dataFormat":"AVRO"}`,
		`"keySchemaMetadata" :{"dataFormat":"AVRO"}`,
		`"valueSchemaMetadata":{"dataFormat":"AVRO"`,
		`"valueSchemaMetadata":{"schemaId":"42","dataFormat":"AVRO"}`,
		`"valueSchemaMetadata":{"dataFormat":"AVRO","schemaId":"schéma"}`,
		`"valueSchemaMetadata":{"dataFormat":"AVRO","schemaId":"a\"b"}`,
		`"valueSchemaMetadata":{"dataFormat":"AVRO","schemaId":"42"} `,
	} {
		variant := strings.TrimSuffix(base, "}") + "," + meta + "}"
		agree(t, []byte(msk(variant, base)))
		// After a record with other metadata, and before one with the same: schemaFast reuses
		// the last strings it read only when they are the same.
		other := strings.TrimSuffix(base, "}") + `,"valueSchemaMetadata":{"dataFormat":"JSON","schemaId":"7"}}`
		agree(t, []byte(msk(other, variant, variant, other)))
	}
}
