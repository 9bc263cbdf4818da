package classify

import "testing"

// TestPR_S5_AThankYouIsNeverStructural: a comment that only thanks or
// approves asks for no change, so it is minor by PR-S5's definitions on
// every kind of file (issue 36: a trusted "Thanks" was a structural
// finding). Those that did not open with praise ("Fixed, thanks!",
// "Perfect, thanks") fired no rule and were borderline, structural where
// no judge runs; they are acknowledgements now.
func TestPR_S5_AThankYouIsNeverStructural(t *testing.T) {
	for _, body := range []string{
		"Fixed, thanks!", "Perfect, thanks", "Resolved, thanks", "Good catch, thanks!", "Done, thank you.",
		"@alice thanks!", "Works for me, thanks.",
	} {
		for _, path := range []string{"internal/x/x.go", "internal/x/x_test.go", "go.mod", ".github/workflows/ci.yml", "README.md", ""} {
			c := Comment{Body: body, Path: path, Source: SourceHuman}
			if r := Heuristic(c); r.Verdict != Minor {
				t.Errorf("%s %q: %s, want minor", path, body, r)
			}
		}
		if !Acknowledges(body) {
			t.Errorf("%q: not an acknowledgement", body)
		}
	}
	// Thanks that open with praise were minor already; they are
	// acknowledgements too, and so is thanks for a defect fixed.
	for _, body := range []string{"Thanks!", "LGTM, thanks", "Looks good", "Thank you!", "👍", "Nice!", "Great work, thank you!",
		"Thanks for fixing the race.", "Thank you for addressing the leak!"} {
		if !Acknowledges(body) {
			t.Errorf("%q: not an acknowledgement", body)
		}
	}
	// More than thanks is not one: a request, a question, a "but", a
	// negation, a defect still there, a nit, code, a second sentence
	// that does not accept.
	for _, body := range []string{
		"Thanks, but this still leaks.", "Thanks! Can you also handle nil?", "Thanks. The retry drops the last message.",
		"Not great, thanks.", "Thanks, please rename it.", "Thanks! nit: typo in the comment here", "Thanks for `foo()`",
		"LGTM. Merging.", "Thanks for fixing the race; Stop has the same race.", "Thanks\n```suggestion\nreturn nil\n```",
		"Looks good once the lock is held.", "Ok", "",
	} {
		if Acknowledges(body) {
			t.Errorf("%q: called an acknowledgement", body)
		}
	}
}
