#!/usr/bin/python3
"""Validate SRR documents against the v4.2 schema (python3-jsonschema,
Draft 7 as the schema says): `validate.py SCHEMA DOC...`; exits 1 naming
each error."""
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator.check_schema(schema)
v = jsonschema.Draft7Validator(schema)
bad = 0
for path in sys.argv[2:]:
    for e in v.iter_errors(json.load(open(path))):
        print(f"{path}: {'/'.join(map(str, e.path))}: {e.message}")
        bad += 1
sys.exit(1 if bad else 0)
