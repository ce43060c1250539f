// Package mdtext writes text that an experiment chose (its name, its
// implementations' and cases' names, its errors) into markdown so that it
// reads as the text it is: a name cannot open a link, an image, HTML, a
// code span or emphasis, nor end a table cell, in a pull request's comment
// or a nightly's summary.
package mdtext

import "strings"

var escaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`,
	"|", `\|`, "~", `\~`, "!", `\!`, "#", `\#`, "\r", " ", "\n", " ",
)

// Escape is s with every markdown sign backslashed and line breaks made
// spaces: one line of literal text, also inside a table cell.
func Escape(s string) string { return escaper.Replace(s) }
