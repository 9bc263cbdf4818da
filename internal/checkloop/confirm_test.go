package checkloop

import (
	"slices"
	"testing"
)

// TestLOOP_8_ChecksRunUncached: every run of a check gets -count=1 in
// GOFLAGS, beside what the user set, so go's test cache never replays a
// pass as a run.
func TestLOOP_8_ChecksRunUncached(t *testing.T) {
	for _, tc := range []struct {
		env, want []string
	}{
		{[]string{"PATH=/bin"}, []string{"PATH=/bin", "GOFLAGS=-count=1"}},
		{[]string{"GOFLAGS=-mod=mod", "PATH=/bin"}, []string{"GOFLAGS=-mod=mod -count=1", "PATH=/bin"}},
		{[]string{"GOFLAGS="}, []string{"GOFLAGS=-count=1"}},
	} {
		in := slices.Clone(tc.env)
		if got := withGoFlag(tc.env, "-count=1"); !slices.Equal(got, tc.want) {
			t.Errorf("withGoFlag(%q) = %q, want %q", tc.env, got, tc.want)
		}
		if !slices.Equal(in, tc.env) {
			t.Errorf("withGoFlag changed its input %q", in)
		}
	}
}
