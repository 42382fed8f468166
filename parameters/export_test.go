package parameters

// WithClock sets a provider's clock, so that tests pass a max age without sleeping.
var WithClock = withClock
