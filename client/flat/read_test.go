package flat

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/xrun-dev/xrun/result"
)

// FuzzRead: no document makes Read panic, and a document result.Decode
// accepts reads case by case as it decodes whole: the same rows, and the
// same results less their cases.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"schema_version": 1, "implementations": ["a"], "cases": [{"label": "x", "results": {"a": {"status": "ok"}}}]}`))
	f.Add([]byte(`{"cases": [{"params": {"n": [1, {"x": "]"}]}}, {}], "experiment": "e"}`))
	f.Add([]byte(`{"cases": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, rows, err := Read(bytes.NewReader(data))
		r, derr := result.Decode(data)
		if derr != nil {
			return
		}
		if err != nil {
			t.Fatalf("Decode accepts, Read refuses: %v", err)
		}
		want := Rows(r)
		r.Cases = nil
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("Read's results\n%+v\nDecode's\n%+v", got, r)
		}
		if len(rows) != len(want) || (len(rows) > 0 && !reflect.DeepEqual(rows, want)) {
			t.Fatalf("Read's rows\n%+v\nRows'\n%+v", rows, want)
		}
	})
}
