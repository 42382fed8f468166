package emfout

// AppendString appends s as a JSON string, as encoding/json writes it: the metrics package
// writes its documents with the same escaping as batch's and fanout's lines.
func AppendString(b []byte, s string) []byte { return appendString(b, s) }

// AppendFloat appends f as encoding/json writes a float64. NaN and the infinities, which JSON
// cannot hold, are written as 0: callers that must not lose them refuse them before.
func AppendFloat(b []byte, f float64) []byte { return appendFloat(b, f) }
