package samlint

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/kafkalambda/toolkit/internal/template"
)

// grant is what one Allow statement gives: actions (IAM patterns, * and ?) on resources
// (each the statement's Resource value; "*" for all).
type grant struct {
	actions   []string
	resources []*template.Node
	anyRes    bool // the resources cannot be told apart from "*" (a managed policy)
}

// samPolicyTemplates lists, for the SAM policy templates a Kafka, SQS or DynamoDB function
// uses, the actions each grants and the parameter naming its resource (from SAM's
// policy_templates.json).
var samPolicyTemplates = map[string]struct {
	param   string
	actions []string
}{
	"SQSSendMessagePolicy":     {"QueueName", []string{"sqs:SendMessage*"}},
	"SQSPollerPolicy":          {"QueueName", []string{"sqs:ChangeMessageVisibility", "sqs:ChangeMessageVisibilityBatch", "sqs:DeleteMessage", "sqs:DeleteMessageBatch", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"}},
	"DynamoDBCrudPolicy":       {"TableName", []string{"dynamodb:GetItem", "dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:Scan", "dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem", "dynamodb:BatchGetItem", "dynamodb:DescribeTable", "dynamodb:ConditionCheckItem"}},
	"DynamoDBWritePolicy":      {"TableName", []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem"}},
	"DynamoDBReadPolicy":       {"TableName", []string{"dynamodb:GetItem", "dynamodb:Scan", "dynamodb:Query", "dynamodb:BatchGetItem", "dynamodb:DescribeTable"}},
	"DynamoDBStreamReadPolicy": {"TableName", []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"}},
}

// managedPolicies lists the AWS managed policies that grant what the checks look for, on
// every resource.
var managedPolicies = map[string][]string{
	"AmazonSQSFullAccess":      {"sqs:*"},
	"AmazonDynamoDBFullAccess": {"dynamodb:*"},
	"AdministratorAccess":      {"*"},
}

// need is an action the code calls, on a resource of the template ("" for any).
type need struct {
	action string
	target string
	why    string
}

// checkIAM checks that the policies of function fn allow every call its code makes.
func (l *linter) checkIAM(fn string, code *codeInfo) {
	env := l.fnEnv(fn)
	var needs []need
	if len(code.sendsSQS) > 0 {
		queues := l.envTargets(env, code, template.TypeQueue)
		why := "it sends to SQS with " + strings.Join(code.sendsSQS, " and ")
		if len(queues) == 0 {
			l.add(fn, "Properties.Environment.Variables", "the code sends to SQS with "+strings.Join(code.sendsSQS, " and ")+" but no environment variable names a queue of the template, so its IAM cannot be checked",
				"pass the queue's URL in an environment variable, as !Ref QUEUE")
		}
		for _, q := range queues {
			needs = append(needs, need{"sqs:SendMessage", q, why})
		}
	}
	tables := l.refsOfType(env[idempotencyTableEnv], template.TypeTable, template.TypeSimpleTable)
	if code.idempotency && len(tables) == 0 {
		tables = l.envTargets(env, code, template.TypeTable, template.TypeSimpleTable)
		if len(tables) == 0 {
			l.add(fn, "Properties.Environment.Variables", "the code "+code.idempotencyUse()+" but no environment variable names a table of the template, so its TTL and IAM cannot be checked",
				"name the table in IDEMPOTENCY_TABLE: !Ref TABLE")
		}
	}
	for _, t := range tables {
		l.markIdempotencyTable(t, fn)
		if code.idempotency {
			for _, a := range []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"} {
				needs = append(needs, need{a, t, "it keeps idempotency records in " + t})
			}
		}
	}
	if code.producer && (code.producerIAM || l.mayBeIAM(env["KAFKA_AUTH"])) {
		why := "it produces to Kafka with IAM auth"
		for _, a := range []string{"kafka-cluster:Connect", "kafka-cluster:WriteData", "kafka-cluster:DescribeTopic"} {
			needs = append(needs, need{a, "", why})
		}
	}
	if len(needs) == 0 {
		return
	}
	grants, where, err := l.functionGrants(fn)
	if err != nil {
		l.add(fn, where, err.Error(), "give the function its permissions through Policies, or a Role of this template")
		return
	}
	var missing []need
	for _, n := range needs {
		if !slices.ContainsFunc(grants, func(g grant) bool { return g.allows(n) }) {
			missing = append(missing, n)
		}
	}
	// One line per resource: the actions it lacks there.
	byTarget := map[string][]need{}
	var order []string
	for _, n := range missing {
		if _, ok := byTarget[n.target]; !ok {
			order = append(order, n.target)
		}
		byTarget[n.target] = append(byTarget[n.target], n)
	}
	for _, t := range order {
		ns := byTarget[t]
		var acts []string
		for _, n := range ns {
			acts = append(acts, n.action)
		}
		on := "any resource"
		if t != "" {
			on = t
		}
		fix := "add a statement allowing " + strings.Join(acts, ", ") + " on " + on
		switch {
		case strings.HasPrefix(acts[0], "sqs:"):
			fix = "add SQSSendMessagePolicy: {QueueName: !GetAtt " + t + ".QueueName} to Policies"
		case strings.HasPrefix(acts[0], "dynamodb:"):
			fix = "add DynamoDBCrudPolicy: {TableName: !Ref " + t + "} to Policies"
		case strings.HasPrefix(acts[0], "kafka-cluster:"):
			fix = "add a statement allowing kafka-cluster:Connect on the cluster and kafka-cluster:WriteData and kafka-cluster:DescribeTopic on the topic"
		}
		l.add(fn, where, fmt.Sprintf("IAM does not allow %s on %s, which the code calls: %s", strings.Join(acts, ", "), on, ns[0].why), fix)
	}
}

// envTargets returns the resources of the given types that the environment variables of a
// function name: those whose names appear in the code first, all of them when none does.
func (l *linter) envTargets(env map[string]*template.Node, code *codeInfo, types ...string) []string {
	var read, all []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		ts := l.refsOfType(env[k], types...)
		all = append(all, ts...)
		if code.literals[k] {
			read = append(read, ts...)
		}
	}
	if len(read) > 0 {
		all = read
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// mayBeIAM reports whether a KAFKA_AUTH value is, or may be, "iam": the text itself, or a
// parameter whose Default or AllowedValues include it.
func (l *linter) mayBeIAM(v *template.Node) bool {
	if v == nil {
		return false
	}
	if v.Kind == template.Scalar {
		return strings.EqualFold(v.Text, "iam")
	}
	for _, r := range template.Refs(v) {
		p := l.t.Parameter(r)
		if p == nil {
			return true // a value klt cannot know: check the worst case
		}
		if strings.EqualFold(p.Default.String(), "iam") {
			return true
		}
		if p.AllowedValues == nil {
			return true
		}
		for _, a := range p.AllowedValues {
			if strings.EqualFold(a.String(), "iam") {
				return true
			}
		}
	}
	return false
}

// functionGrants returns what the policies of function fn allow: its Policies or, when it
// has a Role, that role's, which must be an AWS::IAM::Role of the template. where is the
// property the problems are reported on.
func (l *linter) functionGrants(fn string) (grants []grant, where string, err error) {
	props := l.props(fn)
	if role := props.Get("Role"); role != nil {
		roles := l.refsOfType(role, "AWS::IAM::Role")
		if len(roles) != 1 {
			return nil, "Properties.Role", fmt.Errorf("the Role is not an AWS::IAM::Role of this template, so klt cannot check that it allows what the code calls")
		}
		rp := l.props(roles[0])
		for _, m := range asList(rp.Get("ManagedPolicyArns")) {
			grants = append(grants, managedGrant(m)...)
		}
		for _, p := range asList(rp.Get("Policies")) {
			grants = append(grants, statementGrants(p.Get("PolicyDocument"))...)
		}
		return grants, "Properties.Role", nil
	}
	for _, p := range asList(props.Get("Policies")) {
		switch {
		case p.Kind == template.Scalar:
			grants = append(grants, managedGrant(p)...)
		case p.Get("Statement") != nil:
			grants = append(grants, statementGrants(p)...)
		default:
			for _, pair := range p.Pairs {
				if t, ok := samPolicyTemplates[pair.Key]; ok {
					grants = append(grants, grant{actions: t.actions, resources: []*template.Node{pair.Value.Get(t.param)}})
				}
			}
		}
	}
	return grants, "Properties.Policies", nil
}

// asList returns the items of v: its own when it is a list, else v alone; none for nil.
func asList(v *template.Node) []*template.Node {
	switch {
	case v == nil:
		return nil
	case v.Kind == template.Sequence:
		return v.Items
	}
	return []*template.Node{v}
}

// managedGrant returns what an AWS managed policy, by name or ARN (or Fn::Sub of one), allows
// of what the checks look for.
func managedGrant(v *template.Node) []grant {
	s := v.String()
	if name, arg, ok := v.Intrinsic(); ok && name == "Fn::Sub" {
		s = arg.String()
	}
	name := s[strings.LastIndex(s, "/")+1:]
	if acts, ok := managedPolicies[name]; ok {
		return []grant{{actions: acts, anyRes: true}}
	}
	return nil
}

// statementGrants returns the grants of the Allow statements of a policy document. The
// branches of an Fn::If each count.
func statementGrants(doc *template.Node) []grant {
	var out []grant
	var add func(st *template.Node)
	add = func(st *template.Node) {
		if st == nil || st.Kind != template.Mapping {
			return
		}
		if name, br, ok := st.Intrinsic(); ok && name == "Fn::If" && len(br.Items) == 3 {
			add(br.Items[1])
			add(br.Items[2])
			return
		}
		if st.Get("Effect").String() != "Allow" {
			return
		}
		var acts []string
		for _, a := range asList(st.Get("Action")) {
			if a.IsString() {
				acts = append(acts, a.Text)
			}
		}
		out = append(out, grant{actions: acts, resources: asList(st.Get("Resource"))})
	}
	for _, st := range asList(doc.Get("Statement")) {
		add(st)
	}
	return out
}

// allows reports whether g allows the action n.action on n.target.
func (g grant) allows(n need) bool {
	if !slices.ContainsFunc(g.actions, func(p string) bool { return actionMatch(p, n.action) }) {
		return false
	}
	if g.anyRes || n.target == "" {
		return true
	}
	for _, r := range g.resources {
		if r.String() == "*" || slices.Contains(template.Refs(r), n.target) {
			return true
		}
	}
	return false
}

// actionMatch reports whether the IAM action pattern p (with * and ?) matches action,
// ignoring case as IAM does.
func actionMatch(p, action string) bool {
	ok, err := path.Match(strings.ToLower(p), strings.ToLower(action))
	return err == nil && ok
}
