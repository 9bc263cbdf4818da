package verify

import "testing"

// TestPR_V4_TestMayGoOnlyWhenAFindingAsks: a census test may vanish only
// when a finding names it and asks to remove or skip it.
func TestPR_V4_TestMayGoOnlyWhenAFindingAsks(t *testing.T) {
	fs := []Finding{
		{Path: "summary_test.go", Body: "TestMean is redundant with TestDescribe; remove it."},
		{Path: "summary.go", Body: "MovingSum drops the last window; TestMovingSum should cover it."},
	}
	may := TestMayGo(fs)
	for id, want := range map[string]bool{
		"example.com/textstats.TestMean":      true,
		"example.com/textstats.TestMovingSum": false, // named, not asked to go
		"example.com/textstats.TestDescribe":  true,  // named in a finding that asks for a removal: the words are read, not judged
		"example.com/textstats.TestParse":     false,
		"tests/test_x.py::test_mean":          false,
	} {
		if got := may(id); got != want {
			t.Errorf("TestMayGo(%q) = %v, want %v", id, got, want)
		}
	}
	if TestMayGo(nil)("pkg.TestMean") {
		t.Error("no finding: no test may go")
	}
}
