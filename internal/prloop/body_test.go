package prloop

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPR_G6_LongBodiesKeepTheirMarker: a reply whose reason is longer
// than the forge's limit is cut in the middle with a note; its start,
// signature and marker survive, so the next observation sees the reply.
func TestPR_G6_LongBodiesKeepTheirMarker(t *testing.T) {
	rec := ThreadRecord{ThreadID: "T1", HeadSHA: "h2", Disposition: DispEscalated, Reason: strings.Repeat("é", 70000)}
	body := fitBody(replyBody(rec, "https://github.com/o/r/pull/7", "alice"), MaxBodyChars)
	if n := utf8.RuneCountInString(body); n > MaxBodyChars {
		t.Fatalf("%d characters, limit %d", n, MaxBodyChars)
	}
	if !strings.HasPrefix(body, "Escalated to a human: éé") || !strings.Contains(body, "characters cut by converge") {
		t.Fatalf("start or note lost: %.80q … %q", body, body[len(body)-200:])
	}
	ms := ParseMarkers(body)
	if len(ms) != 1 || ms[0].Thread != "T1" || ms[0].Disposition != DispEscalated {
		t.Fatalf("marker lost: %v", ms)
	}
	if short := "Addressed.\n\n" + Marker("T1", "h", DispAddressed); fitBody(short, MaxBodyChars) != short {
		t.Fatal("a short body changed")
	}
}
