package prloop

import (
	"reflect"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

func TestPR_T4_TrailerValuesReadsOnlyTheTrailerBlock(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want []string
	}{
		{"trailer block", "fix: x\n\nbody text\n\nConverge-Round: 3\n", []string{"3"}},
		{"with other trailers, any key case", "fix: x\n\nSigned-off-by: A <a@x>\nconverge-round: 4", []string{"4"}},
		{"CRLF", "fix: x\r\n\r\nConverge-Round: 5\r\n", []string{"5"}},
		{"continuation line", "fix: x\n\nConverge-Round: 6\n  more\n", []string{"6 more"}},
		{"mentioned in the body only", "fix: x\n\nConverge-Round: 3\n\nSee above.", nil},
		{"last paragraph mixes prose", "fix: x\n\nConverge-Round: 3\nthanks for the review", nil},
		{"title only", "Converge-Round: 3", nil},
		{"not a trailer shape", "fix: x\n\nConverge-Round 3", nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := trailerValues(tt.msg, CommitTrailer); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	if n, ok := roundTrailer("x\n\nConverge-Round:\n"); !ok || n != 0 {
		t.Fatalf("an empty value is still the loop's trailer: %d %v", n, ok)
	}
	if n, ok := roundTrailer(loopCommit("a", "b", 7).Message); !ok || n != 7 {
		t.Fatalf("round %d %v", n, ok)
	}
}

func TestPR_S12_MarkerRoundTrip(t *testing.T) {
	body := "Addressed.\n\n— converge\n\n" + Marker("PRRT_kwDO1", "abc123", DispAddressed) + "\n" + Marker("T 2>", "", DispStale)
	got := ParseMarkers(body)
	want := []ReplyMarker{{"PRRT_kwDO1", "abc123", DispAddressed}, {"T_2_", "-", DispStale}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if ParseMarkers("no marker here <!-- converge:other -->") != nil {
		t.Fatal("parsed a non-marker")
	}
}

func TestPR_S12_DispositionIsOneFunction(t *testing.T) {
	fix := &FixResult{Addressed: []string{"A"}, Blocked: []BlockedFinding{{ID: "B", Reason: "needs design"}, {ID: "C"}}}
	for _, tt := range []struct {
		id     string
		disp   Disposition
		reason string
		stale  int
	}{
		{"A", DispAddressed, "", 0},
		{"B", DispEscalated, "needs design", 0},
		{"C", DispEscalated, "the fixers could not address it", 0},
		{"D", "", "", 0}, // not reported: stays open for the next round
		{"A", DispStale, "resolved in round 2", 2},
	} {
		d, r := disposition(tt.id, fix, tt.stale)
		if d != tt.disp || r != tt.reason {
			t.Errorf("%s stale=%d: got %q %q, want %q %q", tt.id, tt.stale, d, r, tt.disp, tt.reason)
		}
	}
}

func TestPR_T1_CIStateExcludesConvergeAndFailsClosed(t *testing.T) {
	cx := func(name string, status bool, st, concl string) forge.CheckContext {
		return forge.CheckContext{Name: name, IsStatus: status, Status: forge.CheckStatus(st), Conclusion: forge.CheckConclusion(concl)}
	}
	for _, tt := range []struct {
		name string
		ctxs []forge.CheckContext
		want string
	}{
		{"none", nil, ciNone},
		{"only converge", []forge.CheckContext{cx("converge", true, "", "PENDING")}, ciNone},
		{"green run and status", []forge.CheckContext{cx("build", false, "COMPLETED", "SUCCESS"), cx("lint", true, "", "SUCCESS"), cx("converge", true, "", "FAILURE")}, ciSuccess},
		{"neutral and skipped pass", []forge.CheckContext{cx("a", false, "COMPLETED", "NEUTRAL"), cx("b", false, "COMPLETED", "SKIPPED")}, ciSuccess},
		{"queued", []forge.CheckContext{cx("build", false, "QUEUED", "")}, ciPending},
		{"status pending", []forge.CheckContext{cx("ci/x", true, "", "PENDING")}, ciPending},
		{"failure beats pending", []forge.CheckContext{cx("a", false, "IN_PROGRESS", ""), cx("b", false, "COMPLETED", "TIMED_OUT")}, ciFailure},
		{"cancelled fails", []forge.CheckContext{cx("a", false, "COMPLETED", "CANCELLED")}, ciFailure},
		{"status error", []forge.CheckContext{cx("a", true, "", "ERROR")}, ciFailure},
	} {
		if got := ciState(forge.CheckRollup{Contexts: tt.ctxs}); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestPR_S12_ReplyLinksTheCommitAsTheForgeShowsIt: a reply's link to the
// fixing commit opens the change in the PR on each forge: GitHub's
// PR/commits/SHA, GitLab's MR/diffs?commit_id=SHA (subgroups too).
func TestPR_S12_ReplyLinksTheCommitAsTheForgeShowsIt(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct{ pr, want string }{
		{"https://github.com/o/r/pull/7", "[0123456789ab](https://github.com/o/r/pull/7/commits/" + sha + ")"},
		{"https://gitlab.com/g/sub/p/-/merge_requests/5", "[0123456789ab](https://gitlab.com/g/sub/p/-/merge_requests/5/diffs?commit_id=" + sha + ")"},
		{"https://gitlab.example.com/g/p/-/merge_requests/5/", "[0123456789ab](https://gitlab.example.com/g/p/-/merge_requests/5/diffs?commit_id=" + sha + ")"},
		{"", sha},
	} {
		if got := commitLink(tc.pr, sha); got != tc.want {
			t.Errorf("commitLink(%q) = %q, want %q", tc.pr, got, tc.want)
		}
	}
}
