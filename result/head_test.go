package result

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// headOfDecoded is Decode's results without their cases and
// comparisons, what ReadHead must give.
func headOfDecoded(t *testing.T, data []byte) *Results {
	t.Helper()
	r, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	r.Cases, r.Comparisons = nil, nil
	return r
}

// The head of every committed run's results.json is its decoded document
// without the cases and comparisons, read whole or a byte at a time.
func TestReadHeadOfCommittedRuns(t *testing.T) {
	files, err := filepath.Glob("../experiments/*/results/*/results.json")
	if err != nil || len(files) < 20 {
		t.Fatalf("committed results: %d files, %v", len(files), err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want := headOfDecoded(t, data)
		for name, rd := range map[string]io.Reader{"whole": bytes.NewReader(data), "a byte at a time": iotest.OneByteReader(bytes.NewReader(data))} {
			got, err := ReadHead(rd)
			if err != nil {
				t.Fatalf("%s (%s): %v", f, name, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s (%s): the head differs from the decoded document without its cases and comparisons", f, name)
			}
		}
	}
}

// Strings that look like JSON's structure, a "cases" member deeper down
// (a profile's) and escaped quotes and backslashes, in the cases and
// around them, leave the head as Decode reads it.
func TestReadHeadPassesOverStructureInStrings(t *testing.T) {
	r := full()
	r.Error = `a "quoted" \ error with ] and } and "cases":`
	r.Warnings = append(r.Warnings, Warning{Message: `\\`})
	r.Profiles = []Profile{{Implementation: "k", Cases: []string{"T=1"}}}
	for i := range r.Cases {
		r.Cases[i].Label = `label ] } { [ " \" \\`
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want := headOfDecoded(t, data)
	got, err := ReadHead(iotest.HalfReader(bytes.NewReader(data)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("head:\n%+v\nwant\n%+v", got, want)
	}
	if len(got.Profiles) != 1 || len(got.Profiles[0].Cases) != 1 {
		t.Errorf("the profile's cases were taken for the document's: %+v", got.Profiles)
	}
	// cases of null, and cases last, with nothing after them.
	for _, doc := range []string{`{"schema_version":1,"cases":null,"status":"failed"}`, `{"schema_version":1,"status":"failed","cases": [ {"a": "}"} ] }`} {
		h, err := ReadHead(strings.NewReader(doc))
		if err != nil || h.Status != "failed" || h.Cases != nil {
			t.Errorf("%s: %+v, %v", doc, h, err)
		}
	}
}

// A document cut short, in its cases or after them, is an error, never a
// head.
func TestReadHeadOfCutDocument(t *testing.T) {
	data, err := json.Marshal(full())
	if err != nil {
		t.Fatal(err)
	}
	cases := bytes.Index(data, []byte(`"cases"`))
	for _, n := range []int{cases + 20, len(data) - 1, len(data) / 2, 0} {
		if _, err := ReadHead(bytes.NewReader(data[:n])); err == nil {
			t.Errorf("the first %d of %d bytes read as a head", n, len(data))
		}
	}
}

func BenchmarkReadHead(b *testing.B) {
	r := full()
	c := r.Cases[0]
	for len(r.Cases) < 20000 {
		r.Cases = append(r.Cases, c)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ReadHead(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzReadHead: no document makes ReadHead panic, and a document Decode
// accepts has the head Decode gives it without its cases and comparisons.
func FuzzReadHead(f *testing.F) {
	full, err := json.Marshal(full())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(full)
	f.Add([]byte(`{"schema_version":1,"cases":[{"label":"]\"}","results":{}}],"status":"ok"}`))
	f.Add([]byte(`{"schema_version":1,"comparisons":null,"cases":7}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, herr := ReadHead(bytes.NewReader(data))
		r, err := Decode(data)
		if err != nil {
			return
		}
		r.Cases, r.Comparisons = nil, nil
		if herr != nil {
			t.Fatalf("Decode accepts, ReadHead refuses: %v", herr)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("head %+v, want %+v", got, r)
		}
	})
}
