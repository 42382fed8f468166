package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// templateNode reads the repository's template.yaml as a YAML tree (tags such as !Ref kept).
func templateNode(t *testing.T) *yaml.Node {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0]
}

// get returns the value of key in mapping node m, or nil.
func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// walk calls fn on n and every node below it.
func walk(n *yaml.Node, fn func(*yaml.Node)) {
	if n == nil {
		return
	}
	fn(n)
	for _, c := range n.Content {
		walk(c, fn)
	}
}

// functions returns the template's AWS::Serverless::Function resources by logical ID.
func functions(t *testing.T, tpl *yaml.Node) map[string]*yaml.Node {
	fns := map[string]*yaml.Node{}
	res := get(tpl, "Resources")
	for i := 0; i+1 < len(res.Content); i += 2 {
		if r := res.Content[i+1]; get(r, "Type").Value == "AWS::Serverless::Function" {
			fns[res.Content[i].Value] = r
		}
	}
	if len(fns) == 0 {
		t.Fatal("no functions in template.yaml")
	}
	return fns
}

// TestTemplateKeepsSecretsOutOfEnvironments: no function's environment (nor Globals') holds
// a secret's value: no dynamic reference to Secrets Manager or a SecureString parameter, and
// no variable named like a password. Whoever may call lambda:GetFunctionConfiguration reads
// the environment; the producer gets the secret's ARN and reads the secret itself.
func TestTemplateKeepsSecretsOutOfEnvironments(t *testing.T) {
	tpl := templateNode(t)
	envs := map[string]*yaml.Node{"Globals": get(get(get(get(tpl, "Globals"), "Function"), "Environment"), "Variables")}
	for id, fn := range functions(t, tpl) {
		envs[id] = get(get(get(fn, "Properties"), "Environment"), "Variables")
	}
	secretName := regexp.MustCompile(`(?i)PASSWORD|PASSWD|SECRET(_?KEY)?$|TOKEN$`)
	for id, vars := range envs {
		if vars == nil {
			continue
		}
		for i := 0; i+1 < len(vars.Content); i += 2 {
			name := vars.Content[i].Value
			if secretName.MatchString(name) {
				t.Errorf("%s: environment variable %s is named as a secret", id, name)
			}
			walk(vars.Content[i+1], func(n *yaml.Node) {
				if strings.Contains(n.Value, "{{resolve:secretsmanager") || strings.Contains(n.Value, "{{resolve:ssm-secure") {
					t.Errorf("%s: environment variable %s resolves a secret into the environment: %s", id, name, n.Value)
				}
			})
		}
	}
	vars := envs["ProducerFunction"]
	arn := get(vars, "KAFKA_SCRAM_SECRET_ARN")
	if arn == nil || !strings.Contains(nodeText(arn), "KafkaSecretArn") {
		t.Errorf("ProducerFunction: KAFKA_SCRAM_SECRET_ARN does not name KafkaSecretArn: %s", nodeText(arn))
	}
}

// nodeText is a node's scalars, space-separated, for messages and loose checks.
func nodeText(n *yaml.Node) string {
	var parts []string
	walk(n, func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode {
			parts = append(parts, n.Value)
		}
	})
	return strings.Join(parts, " ")
}

// statements returns every policy statement (a mapping with Effect) under fn's Policies, inside
// !If branches too.
func statements(fn *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	walk(get(get(fn, "Properties"), "Policies"), func(n *yaml.Node) {
		if get(n, "Effect") != nil {
			out = append(out, n)
		}
	})
	return out
}

func actions(st *yaml.Node) []string {
	a := get(st, "Action")
	if a.Kind == yaml.ScalarNode {
		return []string{a.Value}
	}
	var out []string
	for _, c := range a.Content {
		out = append(out, c.Value)
	}
	return out
}

// TestTemplateGrantsWhatIsUsed: the permissions are the ones the code and the mappings use.
// DynamoDB actions are the idempotency store's calls (read from the idempotency package's
// source, so a new call there shows here) and the stream reads of the outbox mapping; the
// secret is granted to the functions that read it, on that one ARN; kms:Decrypt only through
// Secrets Manager; and ENI actions are on "*" only where EC2 allows nothing narrower.
func TestTemplateGrantsWhatIsUsed(t *testing.T) {
	used := map[string]bool{
		// The DynamoDB stream event source mapping's reads (ProducerFunction's Outbox event).
		"dynamodb:DescribeStream": true, "dynamodb:GetRecords": true, "dynamodb:GetShardIterator": true, "dynamodb:ListStreams": true,
	}
	calls := regexp.MustCompile(`s\.client\.(\w+)\(`)
	srcs, _ := filepath.Glob(filepath.Join("..", "..", "idempotency", "*.go"))
	for _, f := range srcs {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range calls.FindAllStringSubmatch(string(src), -1) {
			used["dynamodb:"+m[1]] = true
		}
	}
	if !used["dynamodb:PutItem"] || !used["dynamodb:GetItem"] {
		t.Fatalf("found no idempotency store calls in %v (used: %v)", srcs, used)
	}

	for id, fn := range functions(t, templateNode(t)) {
		for _, st := range statements(fn) {
			sid := nodeText(get(st, "Sid"))
			res := get(st, "Resource")
			for _, a := range actions(st) {
				switch {
				case strings.HasPrefix(a, "dynamodb:") && !used[a]:
					t.Errorf("%s %s: grants %s, which no code calls", id, sid, a)
				case a == "secretsmanager:GetSecretValue" && (res.Kind != yaml.ScalarNode || res.Tag != "!Ref" || res.Value != "KafkaSecretArn"):
					t.Errorf("%s %s: GetSecretValue on %s, want the one secret, !Ref KafkaSecretArn", id, sid, nodeText(res))
				case a == "kms:Decrypt" && (nodeText(res) != "KafkaSecretKeyArn" || !strings.Contains(nodeText(get(st, "Condition")), "kms:ViaService")):
					t.Errorf("%s %s: kms:Decrypt on %s (condition %s), want KafkaSecretKeyArn through Secrets Manager only", id, sid, nodeText(res), nodeText(get(st, "Condition")))
				case strings.HasPrefix(a, "ec2:") && res.Kind == yaml.ScalarNode && res.Value == "*" && !strings.HasPrefix(a, "ec2:Describe"):
					t.Errorf("%s %s: %s on every resource; only Describe* cannot be scoped", id, sid, a)
				case strings.HasPrefix(a, "ec2:CreateNetworkInterface") && !strings.Contains(nodeText(res), "subnet/"):
					t.Errorf("%s %s: CreateNetworkInterface not scoped to subnets: %s", id, sid, nodeText(res))
				}
			}
		}
	}

	// The producer reads the secret only with KAFKA_AUTH=scram; the mappings only when
	// self-managed (an MSK mapping here authenticates with IAM).
	for id, cond := range map[string]string{"ProducerFunction": "ProducerReadsSecret", "ConsumerFunction": "MappingReadsSecret", "DispatcherFunction": "MappingReadsSecret"} {
		var found bool
		walk(get(get(functions(t, templateNode(t))[id], "Properties"), "Policies"), func(n *yaml.Node) {
			if n.Tag == "!If" && len(n.Content) == 3 && n.Content[0].Value == cond && slices.Contains(actions(n.Content[1]), "secretsmanager:GetSecretValue") {
				found = true
			}
		})
		if !found {
			t.Errorf("%s: no GetSecretValue statement under !If %s", id, cond)
		}
	}
}
