package prloop

import (
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_T3_TopLevelCommentResetsIdleClock: a person's top-level comment
// on the PR is activity like a thread comment or a review, trusted or not
// ("anyone but converge"); converge's own comments and a bot's report are
// not.
func TestPR_T3_TopLevelCommentResetsIdleClock(t *testing.T) {
	for _, tt := range []struct {
		name   string
		by     string
		at     float64
		now    float64
		reason Reason
	}{
		{"no comment: idle", "", 0, 31, ReasonIdleTimeout},
		{"a trusted human's comment resets the clock", "bob", 10, 35, ""},
		{"an untrusted human's comment too", "mallory", 10, 35, ""},
		{"the clock runs on from the comment", "bob", 10, 41, ReasonIdleTimeout},
		{"converge's own comment does not", self, 10, 35, ReasonIdleTimeout},
		{"a bot's report does not", "netlify[bot]", 10, 35, ReasonIdleTimeout},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := awaiting("h1", 2)
			c := cfg()
			c.ReviewWaitMax = time.Hour
			pr := newPR("h1")
			if tt.by != "" {
				pr.IssueComments = []forge.IssueComment{{ID: 1, NodeID: "IC_1", Author: tt.by, Body: "how is this going?", CreatedAt: at(tt.at)}}
			}
			o := obs(at(tt.now), pr)
			o.BotStartedMax = 101
			_, _, term := Decide(s, o, c)
			wantTerminal(t, term, tt.reason)
		})
	}
}
