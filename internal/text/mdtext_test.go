package text

import "testing"

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"triton":                           "triton",
		"N=4096 op=gemm":                   "N=4096 op=gemm",
		"[click](https://evil.example)":    `\[click\](https://evil.example)`,
		"![x](https://evil.example/t.png)": `\!\[x\](https://evil.example/t.png)`,
		"<img src=x onerror=alert(1)>":     `\<img src=x onerror=alert(1)\>`,
		"a|b":                              `a\|b`,
		"**bold** _it_ `code` ~~s~~ #h":    `\*\*bold\*\* \_it\_ \` + "`" + `code\` + "`" + ` \~\~s\~\~ \#h`,
		"two\nlines":                       "two lines",
		`back\slash`:                       `back\\slash`,
		"fused_gemm case=mm_small":         "fused_gemm case=mm_small",
		"_a_b_ __init__ x_ é_1":            `\_a_b\_ \_\_init\_\_ x\_ é_1`,
	} {
		if got := Markdown(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}
