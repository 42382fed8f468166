package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/internal/template"
)

// templateNode reads the repository's template.yaml (short forms such as !Ref in their long
// form, {Ref: X}).
func templateNode(t *testing.T) *template.Template {
	t.Helper()
	tpl, err := template.ReadFile(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// walk calls fn on n and every node below it.
func walk(n *template.Node, fn func(*template.Node)) {
	if n == nil {
		return
	}
	fn(n)
	for _, c := range n.Items {
		walk(c, fn)
	}
	for _, p := range n.Pairs {
		walk(p.Value, fn)
	}
}

// functions returns the template's AWS::Serverless::Function resources by logical ID.
func functions(t *testing.T, tpl *template.Template) map[string]*template.Resource {
	fns := map[string]*template.Resource{}
	for _, r := range tpl.OfType(template.TypeFunction) {
		fns[r.LogicalID] = r
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
	envs := map[string]*template.Node{"Globals": tpl.Globals.Lookup("Function", "Environment", "Variables")}
	for id, fn := range functions(t, tpl) {
		envs[id] = fn.Properties.Lookup("Environment", "Variables")
	}
	secretName := regexp.MustCompile(`(?i)PASSWORD|PASSWD|SECRET(_?KEY)?$|TOKEN$`)
	for id, vars := range envs {
		if vars == nil {
			continue
		}
		for _, p := range vars.Pairs {
			name := p.Key
			if secretName.MatchString(name) {
				t.Errorf("%s: environment variable %s is named as a secret", id, name)
			}
			walk(p.Value, func(n *template.Node) {
				if strings.Contains(n.Text, "{{resolve:secretsmanager") || strings.Contains(n.Text, "{{resolve:ssm-secure") {
					t.Errorf("%s: environment variable %s resolves a secret into the environment: %s", id, name, n.Text)
				}
			})
		}
	}
	vars := envs["ProducerFunction"]
	arn := vars.Get("KAFKA_SCRAM_SECRET_ARN")
	if arn == nil || !strings.Contains(nodeText(arn), "KafkaSecretArn") {
		t.Errorf("ProducerFunction: KAFKA_SCRAM_SECRET_ARN does not name KafkaSecretArn: %s", nodeText(arn))
	}
}

// nodeText is a node's keys and scalars, space-separated, for messages and loose checks; the
// names of intrinsic functions are left out (!Ref X is "X").
func nodeText(n *template.Node) string {
	var parts []string
	walk(n, func(n *template.Node) {
		if _, _, fn := n.Intrinsic(); !fn {
			for _, p := range n.Pairs {
				parts = append(parts, p.Key)
			}
		}
		if n.Kind == template.Scalar {
			parts = append(parts, n.Text)
		}
	})
	return strings.Join(parts, " ")
}

// statements returns every policy statement (a mapping with Effect) under fn's Policies, inside
// !If branches too.
func statements(fn *template.Resource) []*template.Node {
	var out []*template.Node
	walk(fn.Properties.Get("Policies"), func(n *template.Node) {
		if n.Get("Effect") != nil {
			out = append(out, n)
		}
	})
	return out
}

func actions(st *template.Node) []string {
	a := st.Get("Action")
	if a.Kind == template.Scalar {
		return []string{a.Text}
	}
	var out []string
	for _, c := range a.Items {
		out = append(out, c.Text)
	}
	return out
}

// isRef reports whether n is !Ref name.
func isRef(n *template.Node, name string) bool {
	fn, arg, ok := n.Intrinsic()
	return ok && fn == "Ref" && arg.Text == name
}

// TestTemplateGrantsWhatIsUsed: the permissions are the ones the code and the mappings use.
// DynamoDB actions are the idempotency store's calls (read from the source of its package,
// idempotency/dynamodb, so a new call there shows here) and the stream reads of the outbox mapping; the
// secret is granted to the functions that read it, on that one ARN; kms:Decrypt only through
// Secrets Manager; and ENI actions are on "*" only where EC2 allows nothing narrower.
func TestTemplateGrantsWhatIsUsed(t *testing.T) {
	used := map[string]bool{
		// The DynamoDB stream event source mapping's reads (ProducerFunction's Outbox event).
		"dynamodb:DescribeStream": true, "dynamodb:GetRecords": true, "dynamodb:GetShardIterator": true, "dynamodb:ListStreams": true,
	}
	calls := regexp.MustCompile(`s\.client\.(\w+)\(`)
	srcs, _ := filepath.Glob(filepath.Join("..", "..", "idempotency", "dynamodb", "*.go"))
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
			sid := nodeText(st.Get("Sid"))
			res := st.Get("Resource")
			for _, a := range actions(st) {
				switch {
				case strings.HasPrefix(a, "dynamodb:") && !used[a]:
					t.Errorf("%s %s: grants %s, which no code calls", id, sid, a)
				case a == "secretsmanager:GetSecretValue" && !isRef(res, "KafkaSecretArn"):
					t.Errorf("%s %s: GetSecretValue on %s, want the one secret, !Ref KafkaSecretArn", id, sid, nodeText(res))
				case a == "kms:Decrypt" && (nodeText(res) != "KafkaSecretKeyArn" || !strings.Contains(nodeText(st.Get("Condition")), "kms:ViaService")):
					t.Errorf("%s %s: kms:Decrypt on %s (condition %s), want KafkaSecretKeyArn through Secrets Manager only", id, sid, nodeText(res), nodeText(st.Get("Condition")))
				case strings.HasPrefix(a, "ec2:") && res.Kind == template.Scalar && res.Text == "*" && !strings.HasPrefix(a, "ec2:Describe"):
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
		walk(functions(t, templateNode(t))[id].Properties.Get("Policies"), func(n *template.Node) {
			fn, arg, ok := n.Intrinsic()
			if ok && fn == "Fn::If" && len(arg.Items) == 3 && arg.Items[0].Text == cond && slices.Contains(actions(arg.Items[1]), "secretsmanager:GetSecretValue") {
				found = true
			}
		})
		if !found {
			t.Errorf("%s: no GetSecretValue statement under !If %s", id, cond)
		}
	}
}
