package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShortSHA(t *testing.T) {
	for in, want := range map[string]string{
		"":             "",
		"abc1234":      "abc1234",
		"0123456789ab": "0123456789ab",
		"0123456789abcdef0123456789abcdef01234567": "0123456789ab",
	} {
		if got := ShortSHA(in); got != want {
			t.Errorf("ShortSHA(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 5, ""},
		{"hello", 5, "hello"},
		{"hello!", 5, "hell…"},
		{"héllo wörld", 6, "héllo…"},
		{"日本語のテキスト", 4, "日本語…"},
		{"abc", 1, "…"},
		{"abc", 0, ""},
		{"abc", -1, ""},
	} {
		got := Clip(tc.in, tc.n)
		if got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
		if !utf8.ValidString(got) || (tc.n > 0 && utf8.RuneCountInString(got) > tc.n) {
			t.Errorf("Clip(%q, %d) = %q: invalid or too long", tc.in, tc.n, got)
		}
	}
	long := strings.Repeat("x", 300)
	if got := Clip(long, 140); utf8.RuneCountInString(got) != 140 || !strings.HasSuffix(got, "…") {
		t.Errorf("Clip of 300 to 140 = %d runes", utf8.RuneCountInString(got))
	}
}
