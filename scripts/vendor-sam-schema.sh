#!/usr/bin/env bash
# vendor-sam-schema.sh re-vendors what cmd/klt/internal/samlint checks SAM templates against,
# from the installed SAM translator (pip install aws-sam-translator==VERSION; cfn-lint installs
# it):
#   - sam.schema.json: the SAM schema the translator generates from its own models
#     (samtranslator/internal/schema_source, the file the SAM project publishes as
#     schema_source/sam.schema.json);
#   - sam-events.json: for each event source type of AWS::Serverless::Function, the properties
#     the transform accepts (the property_types of its class in samtranslator/model/eventsources)
#     and the kind it wants of each: int, bool, str, list, dict, or any (not checked). The schema
#     above is stricter than the transform (it leaves DestinationConfig out of SelfManagedKafka,
#     for one); klt lint accepts what the transform accepts.
#
#   scripts/vendor-sam-schema.sh
set -euo pipefail
out=$(dirname "$0")/../cmd/klt/internal/samlint/schema
site=$(python3 -c 'import samtranslator, os; print(os.path.dirname(os.path.dirname(samtranslator.__file__)))')
version=$(python3 -c 'import importlib.metadata as m; print(m.version("aws-sam-translator"))')
python3 - "$out" <<'PY'
import inspect, json, sys
from pathlib import Path
from samtranslator.internal.schema_source.schema import SamModel, get_schema, json_dumps
from samtranslator.model import PassThroughProperty
import samtranslator.model.types as types
import samtranslator.model.eventsources.pull as pull
import samtranslator.model.eventsources.push as push
import samtranslator.model.eventsources.cloudwatchlogs as cwl
import samtranslator.model.eventsources.scheduler as scheduler

out = Path(sys.argv[1])
(out / "sam.schema.json").write_text(json_dumps(get_schema(SamModel)))

kinds = {types.IS_INT: "int", types.IS_BOOL: "bool", types.IS_STR: "str", types.IS_LIST: "list", types.IS_DICT: "dict"}
events = {}
for mod in (pull, push, cwl, scheduler):
    for _, cls in inspect.getmembers(mod, inspect.isclass):
        typ = getattr(cls, "resource_type", None)
        if cls.__module__ != mod.__name__ or not typ:
            continue
        events[typ] = {
            name: "any" if isinstance(pt, PassThroughProperty) else kinds.get(pt.validate, "any")
            for name, pt in cls.property_types.items()
        }
(out / "sam-events.json").write_text(json.dumps(events, indent=2, sort_keys=True) + "\n")
PY
cp "$site/aws_sam_translator-$version.dist-info/licenses/LICENSE" "$site/aws_sam_translator-$version.dist-info/licenses/NOTICE" "$out/"
sed -i -E "s/^(Version: ).*/\1aws-sam-translator $version/" "$out/README.md"
echo "$(jq 'length' "$out/sam-events.json") event types, sam.schema.json $(stat -c %s "$out/sam.schema.json") bytes"
