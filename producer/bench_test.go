package producer_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/producer"
)

// benchRecords are n keyed records of about 250 bytes of JSON, as a function writes results.
func benchRecords(n int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{
			Topic: "bench",
			Key:   fmt.Appendf(nil, "customer-%d", i%97),
			Value: fmt.Appendf(nil, `{"orderId":"o-%08d","customerId":"customer-%d","status":"CONFIRMED","total":{"amount":%d.%02d,"currency":"EUR"},"items":[{"sku":"SKU-%04d","qty":%d}],"at":"2026-11-30T17:00:00.%03dZ"}`,
				i, i%97, i%500, i%100, i%1000, 1+i%5, i%1000),
			Headers: []kgo.RecordHeader{{Key: "traceparent", Value: []byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}},
		}
	}
	return recs
}

// BenchmarkProduce produces sets of 100 records and waits for them, as a handler does:
// impl=producer is Produce on a client from producer.NewClient (MSK IAM authentication
// verified by the broker, the package's defaults), impl=producer-snappy the same with kgo's
// default compression, impl=kgo ProduceSync on a plain kgo client with its defaults, all
// against the same kfake brokers in the same run. Authentication costs only when a
// connection opens.
func BenchmarkProduce(b *testing.B) {
	const n = 100
	creds := aws.Credentials{AccessKeyID: "AKIABENCHBENCHBENCH0", SecretAccessKey: "bench-secret", SessionToken: "bench"}
	broker := standintest.StartKafka(b, standin.WithIAMRegion("eu-west-1"), standin.WithCredentials(creds),
		standin.WithClusterOptions(kfake.NumBrokers(3), kfake.SeedTopics(6, "bench")))

	pcl, err := producer.NewClient(producer.WithBootstrapServers(broker.Addrs()...),
		producer.WithIAM(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil })),
		producer.WithRegion("eu-west-1"),
		producer.WithClientOptions(kgo.DialTLSConfig(nil))) // kfake here speaks plaintext; TLS would cost both the same
	if err != nil {
		b.Fatal(err)
	}
	defer pcl.Close()
	kcl, err := kgo.NewClient(kgo.SeedBrokers(broker.Addrs()...))
	if err != nil {
		b.Fatal(err)
	}
	defer kcl.Close()

	run := func(b *testing.B, produce func(context.Context, []*kgo.Record) error) {
		recs := benchRecords(n)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if err := produce(ctx, recs); err != nil { // connect and authenticate before timing
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := produce(ctx, recs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
	}
	// The same client options but kgo's default compression (snappy), to tell the cost of
	// the zstd default from the cost of authentication and Produce.
	scl, err := producer.NewClient(producer.WithBootstrapServers(broker.Addrs()...),
		producer.WithIAM(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil })),
		producer.WithRegion("eu-west-1"),
		producer.WithClientOptions(kgo.DialTLSConfig(nil), kgo.ProducerBatchCompression(kgo.SnappyCompression(), kgo.NoCompression())))
	if err != nil {
		b.Fatal(err)
	}
	defer scl.Close()
	b.Run("impl=producer", func(b *testing.B) {
		run(b, func(ctx context.Context, recs []*kgo.Record) error { return producer.Produce(ctx, pcl, recs...).Err() })
	})
	b.Run("impl=producer-snappy", func(b *testing.B) {
		run(b, func(ctx context.Context, recs []*kgo.Record) error { return producer.Produce(ctx, scl, recs...).Err() })
	})
	b.Run("impl=kgo", func(b *testing.B) {
		run(b, func(ctx context.Context, recs []*kgo.Record) error { return kcl.ProduceSync(ctx, recs...).FirstErr() })
	})
	if toks := broker.Tokens(); len(toks) == 0 {
		b.Fatal("the producer never authenticated")
	}
}

// BenchmarkCompression compresses and decompresses one batch of the records above with each
// codec kgo offers, reporting the compressed size as a fraction of the raw size: the evidence
// behind the zstd default.
func BenchmarkCompression(b *testing.B) {
	var raw []byte
	for _, r := range benchRecords(200) {
		raw = append(append(raw, r.Key...), r.Value...)
	}
	for _, c := range []struct {
		name  string
		codec kgo.CompressionCodec
		typ   kgo.CompressionCodecType
	}{
		{"snappy", kgo.SnappyCompression(), kgo.CodecSnappy},
		{"lz4", kgo.Lz4Compression(), kgo.CodecLz4},
		{"zstd", kgo.ZstdCompression(), kgo.CodecZstd},
		{"gzip", kgo.GzipCompression(), kgo.CodecGzip},
	} {
		comp, err := kgo.DefaultCompressor(c.codec)
		if err != nil {
			b.Fatal(err)
		}
		dec := kgo.DefaultDecompressor()
		var buf bytes.Buffer
		out, _ := comp.Compress(&buf, raw)
		packed := append([]byte(nil), out...)
		b.Run("op=compress/impl="+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				buf.Reset()
				comp.Compress(&buf, raw)
			}
			b.ReportMetric(float64(len(packed))/float64(len(raw)), "size/raw")
		})
		b.Run("op=decompress/impl="+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := dec.Decompress(packed, c.typ); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
