package metrics

// CheckEMF checks one line against the EMF specification's schema and its rules beyond it, for
// the tests of package metrics_test, which check the documents of packages batch and fanout.
var CheckEMF = checkEMF
