package flat

import (
	"bytes"
	"reflect"
	"testing"
	"unsafe"

	"github.com/xrun-dev/xrun/result"
)

// own leaves no string sharing the bytes it was decoded from: after it,
// overwriting those bytes changes nothing that was read.
func TestOwn(t *testing.T) {
	buf := []byte("label impl error param key list")
	at := func(i, n int) string { return unsafe.String(&buf[i], n) }
	type inner struct {
		Error string
		List  []string
	}
	type doc struct {
		Label   string
		Results map[string]*inner
		Params  map[string]any
		Any     any
	}
	d := doc{
		Label:   at(0, 5),
		Results: map[string]*inner{at(6, 4): {Error: at(11, 5), List: []string{at(27, 4)}}},
		Params:  map[string]any{at(23, 3): at(17, 5), "nested": map[string]any{"x": []any{at(0, 5)}}},
		Any:     at(6, 4),
	}
	own(reflect.ValueOf(&d))
	for i := range buf {
		buf[i] = 'X'
	}
	want := doc{
		Label:   "label",
		Results: map[string]*inner{"impl": {Error: "error", List: []string{"list"}}},
		Params:  map[string]any{"key": "param", "nested": map[string]any{"x": []any{"label"}}},
		Any:     "impl",
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("after own and overwriting the bytes: %+v, want %+v", d, want)
	}
}

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
