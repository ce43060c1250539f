package result

import _ "embed"

// Schema is the JSON Schema (draft 2020-12) of results.json, for clients
// that validate or serve it.
//
//go:embed schema.json
var Schema []byte
