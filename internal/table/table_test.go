package table

import (
	"strings"
	"testing"
)

func TestCSVCellQuotesFormulas(t *testing.T) {
	for in, want := range map[string]string{
		"=HYPERLINK(\"http://x\")": "'=HYPERLINK(\"http://x\")",
		"+cmd|' /C calc'!A0":       "'+cmd|' /C calc'!A0",
		"-2+3":                     "'-2+3",
		"@SUM(A1)":                 "'@SUM(A1)",
		"\tx":                      "'\tx",
		"\rx":                      "'\rx",
		"-inf":                     "'-inf",
		"-0x1p-2":                  "'-0x1p-2",
		"-1.5":                     "-1.5",
		"+3":                       "+3",
		"-1e-05":                   "-1e-05",
		"blocked":                  "blocked",
		"a=b":                      "a=b",
		"":                         "",
		"triton\x1b[2J\x1b[31m":    "triton",
		"=x\x1b]0;owned\x07":       "'=x",
	} {
		if got := CSVCell(in); got != want {
			t.Errorf("CSVCell(%q) = %q, want %q", in, got, want)
		}
	}
}

func sample() *Table {
	t := &Table{Columns: append(Heads("#"), Col("JOB", "job"), Col("IMPL", "impl"), Column{Head: Fig("ms")})}
	t.Add(Fig("1"), Code("3fa1"), Text("fused_gemm*"), Fig("0.812"))
	t.Add(Fig("2"), Code("runs/a|b"), Text("=cmd"), Fig("12.5"))
	return t
}

// The text table aligns each column two spaces past its widest cell and
// leaves the last cell of a line unpadded.
func TestWriteText(t *testing.T) {
	var b strings.Builder
	if err := sample().WriteText(&b, "  "); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"  #  JOB       IMPL         ms\n" +
		"  1  3fa1      fused_gemm*  0.812\n" +
		"  2  runs/a|b  =cmd         12.5\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// Markdown writes figures as they are, a run's names escaped and ids as
// code spans (escaped where they are no plain id).
func TestWriteMarkdown(t *testing.T) {
	var b strings.Builder
	if err := sample().WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"| # | job | impl | ms |\n" +
		"|---|---|---|---|\n" +
		"| 1 | `3fa1` | fused_gemm\\* | 0.812 |\n" +
		"| 2 | runs/a\\|b | =cmd | 12.5 |\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// Drop takes a column out of the header and of every row.
func TestDrop(t *testing.T) {
	tb := sample()
	tb.Drop(1)
	var b strings.Builder
	if err := tb.WriteText(&b, ""); err != nil {
		t.Fatal(err)
	}
	if want := "#  IMPL         ms\n1  fused_gemm*  0.812\n2  =cmd         12.5\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestOrDash(t *testing.T) {
	if OrDash("") != "-" || OrDash("gpu01") != "gpu01" {
		t.Errorf("OrDash: %q, %q", OrDash(""), OrDash("gpu01"))
	}
}
