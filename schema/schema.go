// Package schema holds the JSON Schemas pneuma publishes for the files people
// write by hand, embedded so that `pneuma schema` prints exactly the
// committed file. Editors read them through the yaml-language-server modeline
// (`# yaml-language-server: $schema=./schema/jobs.schema.json`).
package schema

import _ "embed"

// Jobs is the JSON Schema (draft-07) of the jobs file, schema/jobs.schema.json.
//
//go:embed jobs.schema.json
var Jobs []byte
