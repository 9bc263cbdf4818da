package secure

import (
	"strings"
	"sync"
	"testing"
)

// TestSEC_3_SecretsRedactWhatIsAddedLater: a secret added after a
// redaction was first made is redacted from then on; a secret holding
// another is removed whole; blanks and a nil set redact nothing.
func TestSEC_3_SecretsRedactWhatIsAddedLater(t *testing.T) {
	var s Secrets
	s.Add("ghs_first", " ")
	if got := s.Redact("a ghs_first b ghs_second"); got != "a [REDACTED] b ghs_second" {
		t.Fatalf("before the second: %q", got)
	}
	s.Add("ghs_second", "ghs_second-and-more")
	if got := s.Redact("ghs_second-and-more, ghs_second, ghs_first"); got != "[REDACTED], [REDACTED], [REDACTED]" {
		t.Fatalf("after the second: %q", got)
	}
	if n := len(s.List()); n != 3 {
		t.Fatalf("%d secrets, want 3", n)
	}
	var none *Secrets
	if none.Redact("x ghs_first") != "x ghs_first" || none.List() != nil {
		t.Fatal("a nil set redacts")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := "ghs_" + strings.Repeat("x", i+1)
			s.Add(tok)
			if strings.Contains(s.Redact("<"+tok+">"), tok) {
				t.Errorf("%s not redacted after its Add", tok)
			}
		}()
	}
	wg.Wait()
}
