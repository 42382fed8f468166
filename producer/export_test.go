package producer

// WaitDeadline is waitDeadline, for the tests that give it the time.
var WaitDeadline = waitDeadline
