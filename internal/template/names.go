package template

import (
	"fmt"
	"strconv"
)

// MaxLogicalID is the longest logical ID CloudFormation takes: "Resources": "The logical ID
// must be alphanumeric (A-Za-z0-9) and unique within the template", and a template's
// identifiers are at most 255 characters (CloudFormation quotas, "Template" section).
const MaxLogicalID = 255

// IsLogicalID reports whether s is a logical ID CloudFormation accepts: 1 to MaxLogicalID
// characters, each A-Z, a-z or 0-9. AWS's "Resources" template section: "The logical ID must
// be alphanumeric (A-Za-z0-9) and unique within the template." A name that passes is safe
// wherever klt uses it as a name: a make target, a file name, a process's environment.
func IsLogicalID(s string) bool {
	if s == "" || len(s) > MaxLogicalID {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// checkName refuses a logical ID (of what: a resource, a parameter...) that CloudFormation
// would refuse, naming its place. The SAM transform refuses the same for the events of a
// function ("Logical ids must be alphanumeric", samtranslator/model/__init__.py), whose names
// go into the logical IDs of the resources it makes.
func checkName(what, name string, at Pos) error {
	if IsLogicalID(name) {
		return nil
	}
	if len(name) > MaxLogicalID {
		return errorAt(at, fmt.Sprintf("the %s logical ID of %d characters is too long: CloudFormation takes at most %d", what, len(name), MaxLogicalID))
	}
	return errorAt(at, fmt.Sprintf("the %s logical ID %s is not alphanumeric: CloudFormation takes only A-Z, a-z and 0-9 in one", what, strconv.Quote(clipName(name))))
}

// clipName shortens a name for a message.
func clipName(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
