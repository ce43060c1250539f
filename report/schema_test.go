package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/xrun-dev/xrun/result"
)

// The documents the reports are tested on, made with package analyze, are
// valid results.json: what analyze produces fits the schema.
func TestFixturesMatchSchema(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(result.Schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*result.Results{"seed001": seed001(t), "cpu_failures": cpuFailures(t)} {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(inst); err != nil {
			t.Errorf("%s does not match schema.json: %v", name, err)
		}
	}
}
