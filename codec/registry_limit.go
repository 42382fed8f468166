package codec

import "github.com/kafkalambda/toolkit/codec/internal/answercap"

// errAnswerTooLarge is the cause of a registry answer over 4 MiB (answercap.Max).
var errAnswerTooLarge = answercap.ErrTooLarge
