package classify

import "testing"

// BenchmarkHeuristicPerComment times the heuristic over every labelled comment (the
// written set and the real ones), per comment: what classifying a new
// review comment costs.
func BenchmarkHeuristicPerComment(b *testing.B) {
	var cs []Comment
	for _, l := range loadDataSet(b) {
		cs = append(cs, l.Comment)
	}
	for _, r := range loadAllReal(b) {
		cs = append(cs, r.Comment)
	}
	b.ResetTimer()
	n := 0
	for b.Loop() {
		Heuristic(cs[n%len(cs)])
		n++
	}
}
