package result

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecode checks that Decode never panics and that whatever it accepts
// survives encoding and decoding again unchanged.
func FuzzDecode(f *testing.F) {
	full, err := json.Marshal(full())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(full)
	f.Add([]byte(`{"schema_version":1}`))
	f.Add([]byte(`{"schema_version":1,"cases":[{"params":{"T":1024},"results":{"a":{"status":"ok","timing":{"median_ms":1}}}}]}`))
	f.Add([]byte(`{"schema_version":1,"finished_at":"2026-01-01T00:00:00+01:00","env":{"extra":{"k":"v"}}}`))
	f.Add([]byte(`{"schema_version":0}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			return
		}
		once, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("encode decoded results: %v", err)
		}
		r2, err := Decode(once)
		if err != nil {
			t.Fatalf("decode re-encoded results: %v\n%s", err, once)
		}
		twice, err := json.Marshal(r2)
		if err != nil {
			t.Fatalf("encode again: %v", err)
		}
		if !bytes.Equal(once, twice) {
			t.Fatalf("round trip changed the document:\n%s\n%s", once, twice)
		}
	})
}
