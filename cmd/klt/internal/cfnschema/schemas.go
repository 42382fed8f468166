package cfnschema

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/kafkalambda/toolkit/internal/template"
)

// schemasGz is the vendored schemas: one JSON object, type name -> schema (schemas/SOURCES.md).
//
//go:embed schemas/us-east-1.json.gz
var schemasGz []byte

// maxSchemas bounds what the vendored file may inflate to.
const maxSchemas = 16 << 20

var (
	schemasOnce sync.Once
	schemas     map[string]map[string]any
	schemasErr  error
)

// load decodes the vendored schemas once.
func load() (map[string]map[string]any, error) {
	schemasOnce.Do(func() {
		zr, err := gzip.NewReader(bytes.NewReader(schemasGz))
		if err != nil {
			schemasErr = fmt.Errorf("vendored CloudFormation schemas: %w", err)
			return
		}
		data, err := io.ReadAll(io.LimitReader(zr, maxSchemas))
		if err != nil {
			schemasErr = fmt.Errorf("vendored CloudFormation schemas: %w", err)
			return
		}
		if err := json.Unmarshal(data, &schemas); err != nil {
			schemasErr = fmt.Errorf("vendored CloudFormation schemas: %w", err)
		}
	})
	return schemas, schemasErr
}

// Known reports whether klt carries the schema of the resource type typ.
func Known(typ string) bool {
	s, err := load()
	return err == nil && s[typ] != nil
}

// Types returns the resource types klt carries schemas of, sorted.
func Types() []string {
	s, _ := load()
	out := make([]string, 0, len(s))
	for t := range s {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Unchecked returns the resource types of t, once each and sorted, that klt has no schema of:
// their properties are not checked. SAM's own types (AWS::Serverless::*, checked against the
// SAM schema) and custom resources (Custom::*, AWS::CloudFormation::CustomResource, which have
// no schema) are left out.
func Unchecked(t *template.Template) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range t.Resources {
		typ := r.Type
		if typ == "" || seen[typ] || Known(typ) || strings.HasPrefix(typ, "AWS::Serverless::") ||
			strings.HasPrefix(typ, "Custom::") || typ == "AWS::CloudFormation::CustomResource" {
			continue
		}
		seen[typ] = true
		out = append(out, typ)
	}
	sort.Strings(out)
	return out
}

// PrimaryIdentifier returns the properties that identify a resource of type typ in its
// account and region, when the template sets all of them (top-level properties none of which
// is read-only), as the type's schema says: AWS::Lambda::Function's FunctionName. Two
// resources of the type with the same values collide (cfn-lint E3019). nil when klt has no
// schema of the type, or the service names the resource itself.
func PrimaryIdentifier(typ string) []string {
	s, err := load()
	if err != nil {
		return nil
	}
	return strs(s[typ]["primaryIdentifier"])
}
