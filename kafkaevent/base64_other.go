//go:build purego || !(amd64 || arm64)

package kafkaevent

// haveSIMD is false: this build decodes base64 in plain Go alone.
const haveSIMD = false

// decodeBase64Blocks is never called here (haveSIMD is false); it decodes nothing.
func decodeBase64Blocks(dst, src []byte) (nsrc, ndst int, stop bool) { return 0, 0, false }
