package samspec

import "github.com/kafkalambda/toolkit/esm"

// Destination is m's on-failure destination, for the tests of package samspec_test.
func Destination(m *MappingSpec, r *Resolver, client esm.SQSSender) (esm.Destination, error) {
	return m.destination(r, client)
}
