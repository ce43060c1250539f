package result

import "testing"

func TestAutotuneChange(t *testing.T) {
	big := Autotune{Kernel: "matmul_kernel", Kind: "triton", Key: "8192, 8192, 8192", Config: "128x256x64/w8/s3"}
	small := big
	small.Config = "128x128x32/w4/s4"
	other := Autotune{Kernel: "softmax", Kind: "triton", Key: "4096", Config: "1024/w4/s1"}
	atOtherKey := big
	atOtherKey.Key, atOtherKey.Config = "4096, 4096, 4096", "64x64x32/w4/s4"
	for _, c := range []struct {
		name          string
		before, after []Autotune
		want          string
	}{
		{"same", []Autotune{big, other}, []Autotune{other, big}, ""},
		{"changed", []Autotune{big, other}, []Autotune{small, other}, "config changed: matmul_kernel 128x256x64/w8/s3 → 128x128x32/w4/s4"},
		{"one side recorded nothing", nil, []Autotune{small}, ""},
		{"another key is another kernel's choice", []Autotune{big}, []Autotune{atOtherKey}, ""},
		{"two changed", []Autotune{big, other}, []Autotune{small, {Kernel: "softmax", Kind: "triton", Key: "4096", Config: "2048/w8/s1"}},
			"config changed: matmul_kernel 128x256x64/w8/s3 → 128x128x32/w4/s4; softmax 1024/w4/s1 → 2048/w8/s1"},
	} {
		if got := AutotuneChange(c.before, c.after); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
