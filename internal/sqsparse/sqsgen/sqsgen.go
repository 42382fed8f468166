// Package sqsgen writes realistic SQS event payloads for benchmarks: the batch a Lambda function
// behind an SQS event source mapping receives, in the shape and member order of the example in
// the Lambda developer guide, as compact JSON.
package sqsgen

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// QueueARN is the standard queue the generated messages come from.
const QueueARN = "arn:aws:sqs:us-east-1:123456789012:orders"

// Event returns an event of n messages from a standard queue, the same for the same arguments.
// Each message's body is a JSON document of exactly bodySize bytes (a run of 'x' when bodySize
// is too small for one), so that its quotes are escaped in the payload as they are in real
// ones; each has a UUID message ID, a 176-character receipt handle, the four system attributes
// SQS always sends, no message attributes, and the body's real MD5.
func Event(n, bodySize int) []byte {
	var b strings.Builder
	b.WriteString(`{"Records":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		body := Body(i, bodySize)
		sum := md5.Sum([]byte(body))
		sent := 1768471200000 + int64(i)
		fmt.Fprintf(&b, `{"messageId":%s,"receiptHandle":%s,"body":%s,"attributes":{"ApproximateReceiveCount":"1","SentTimestamp":"%d","SenderId":"AIDAIENQZJOLO23YVJ4VO","ApproximateFirstReceiveTimestamp":"%d"},"messageAttributes":{},"md5OfBody":"%s","eventSource":"aws:sqs","eventSourceARN":%s,"awsRegion":"us-east-1"}`,
			quote(MessageID(i)), quote(receiptHandle(i)), quote(body), sent, sent+7, hex.EncodeToString(sum[:]), quote(QueueARN))
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// MessageID returns the ID of the i-th message of Event: a version 4 UUID made from i.
func MessageID(i int) string {
	h := md5.Sum(binary.BigEndian.AppendUint64(nil, uint64(i)))
	h[6] = h[6]&0x0f | 0x40 // version 4
	h[8] = h[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// Body returns the body of the i-th message of Event, bodySize bytes long.
func Body(i, bodySize int) string {
	prefix := fmt.Sprintf(`{"orderId":%d,"customerId":"c-%05d","status":"PLACED","total":%d.%02d,"note":"`, 100000+i, i%5000, 10+i%990, i%100)
	const suffix = `"}`
	fill := bodySize - len(prefix) - len(suffix)
	if fill < 0 {
		return strings.Repeat("x", bodySize)
	}
	return prefix + strings.Repeat("n", fill) + suffix
}

func receiptHandle(i int) string {
	var raw [128]byte
	for k := 0; k < len(raw); k += 16 {
		h := md5.Sum(binary.BigEndian.AppendUint64([]byte("rh"), uint64(i)<<8|uint64(k)))
		copy(raw[k:], h[:])
	}
	return "AQEB" + base64.StdEncoding.EncodeToString(raw[:])[:172]
}

func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}
