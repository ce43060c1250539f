// Markdown writes text that an experiment chose (its name, its
// implementations' and cases' names, its errors) into markdown so that it
// reads as the text it is: a name cannot open a link, an image, HTML, a
// code span or emphasis, nor end a table cell, in a pull request's comment
// or a nightly's summary.

package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

var escaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`,
	"|", `\|`, "~", `\~`, "!", `\!`, "#", `\#`, "\r", " ", "\n", " ",
)

// Markdown is s with every markdown sign backslashed and line breaks made
// spaces: one line of literal text, also inside a table cell. An
// underscore between two letters or digits (fused_gemm) stays as it is:
// markdown never reads one there as emphasis, and the source stays
// readable.
func Markdown(s string) string {
	if !strings.Contains(s, "_") {
		return escaper.Replace(s)
	}
	var b strings.Builder
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '_' || !intraword(s, i) {
			continue
		}
		b.WriteString(escaper.Replace(s[start:i]))
		b.WriteByte('_')
		start = i + 1
	}
	b.WriteString(escaper.Replace(s[start:]))
	return b.String()
}

// intraword says whether the underscore at s[i] has a letter or a digit on
// both sides.
func intraword(s string, i int) bool {
	before, _ := utf8.DecodeLastRuneInString(s[:i])
	after, _ := utf8.DecodeRuneInString(s[i+1:])
	word := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	return word(before) && word(after)
}
