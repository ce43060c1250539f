// Scaffold is the experiment `xrun init` writes: a spec with every
// section a first experiment needs, commented, and a matrix product to
// time against its reference.

package spec

import (
	"bytes"
	"embed"
	"fmt"
	"text/template"
)

//go:embed files
var files embed.FS

// ScaffoldFile is one file of the scaffold: its name in the experiment's
// directory and its contents.
type ScaffoldFile struct {
	Name string
	Data []byte
}

// Scaffold are the scaffold's files for an experiment called name on base
// ("": the default base of its mode), the spec first.
func Scaffold(name, base string) ([]ScaffoldFile, error) {
	tmpl, err := template.ParseFS(files, "files/xrun.yaml.tmpl")
	if err != nil {
		return nil, fmt.Errorf("read the scaffold: %w", err)
	}
	var y bytes.Buffer
	if err := tmpl.Execute(&y, struct{ Name, Base string }{name, base}); err != nil {
		return nil, fmt.Errorf("write the scaffold: %w", err)
	}
	py, err := files.ReadFile("files/matmul.py")
	if err != nil {
		return nil, fmt.Errorf("read the scaffold: %w", err)
	}
	return []ScaffoldFile{{FileName, y.Bytes()}, {"matmul.py", py}}, nil
}
