#!/usr/bin/env bash
# vendor-cfn-schemas.sh re-vendors the CloudFormation resource provider schemas that
# cmd/klt/internal/cfnschema checks templates against, from the installed cfn-lint
# (pip install cfn-lint==VERSION). It keeps only the resource types this toolkit's templates
# use and only the keywords the validator reads, and writes one JSON object, type -> schema.
#
#   scripts/vendor-cfn-schemas.sh [SITE_PACKAGES]
set -euo pipefail
site=${1:-$(python3 -c 'import cfnlint, os; print(os.path.dirname(os.path.dirname(cfnlint.__file__)))')}
data=$site/cfnlint/data/schemas
out=$(dirname "$0")/../cmd/klt/internal/cfnschema/schemas
version=$(python3 -c 'import importlib.metadata as m; print(m.version("cfn-lint"))')

# The types: whole services, and the networking and schema-registry types of EC2 and Glue.
services='Lambda|SQS|SNS|DynamoDB|Kinesis|MSK|IAM|SecretsManager|Logs|CloudWatch|S3|Events|Pipes'
ec2='VPC|Subnet|SecurityGroup|SecurityGroupIngress|SecurityGroupEgress|InternetGateway|VPCGatewayAttachment|NatGateway|EIP|RouteTable|Route|SubnetRouteTableAssociation|VPCEndpoint|NetworkAcl|NetworkAclEntry|SubnetNetworkAclAssociation|VPCCidrBlock|SubnetCidrBlock'
glue='Registry|Schema|SchemaVersion|SchemaVersionMetadata'
grep -E "^    \"AWS::(($services)::[A-Za-z0-9]+|EC2::($ec2)|Glue::($glue))\": " "$data/providers/us_east_1.py" |
	sed -E 's/^ *"([^"]+)": "([0-9a-f]+)",?$/\1 \2/' |
	while read -r typ hash; do
		# Read-only properties (Arn, Id, ...) are outputs: setting one is an unknown property.
		# The primary identifier stays when the template sets all of it (top-level properties,
		# none read-only): two resources of the type may not share its value (cfn-lint E3019).
		jq -c --arg t "$typ" '{($t): (
			(.readOnlyProperties // [] | map(select(test("^/properties/[^/]+$")) | sub("^/properties/"; ""))) as $ro
			| (.primaryIdentifier // []) as $pid
			| (if ($pid | length) > 0 and all($pid[]; test("^/properties/[^/]+$")) and
				all($pid[]; sub("^/properties/"; "") as $p | ($ro | index($p)) == null)
				then {primaryIdentifier: [$pid[] | sub("^/properties/"; "")]} else {} end) as $keep
			| del(.properties[$ro[]])
			| del(.. | objects | .sourceUrl, .examples, .insertionOrder, .tagging, .primaryIdentifier,
				.additionalIdentifiers, .createOnlyProperties, .conditionalCreateOnlyProperties,
				.writeOnlyProperties, .readOnlyProperties, .propertyTransform, .replacementStrategy,
				.handlers, .deprecatedProperties, .relationshipRef, .documentationUrl, .format, .default,
				.title, .taggable, .tagOnCreate, .tagUpdatable, .tagProperty, .cloudFormationSystemTags,
				."$schema", ."$comment", .mappings, .resourceLink)
			| . + $keep
		)}' "$data/resources/$hash.json"
	done | jq -s -S 'add' >"$out/us-east-1.json"
gzip -n -9 -f "$out/us-east-1.json"
cp "$site/cfn_lint-$version.dist-info/licenses/LICENSE" "$site/cfn_lint-$version.dist-info/licenses/NOTICE" "$out/"
sed -i -E "s/^(Version: ).*/\1cfn-lint $version/" "$out/SOURCES.md"
echo "$(zcat "$out/us-east-1.json.gz" | jq 'length') types, $(stat -c %s "$out/us-east-1.json.gz") bytes gzipped"
