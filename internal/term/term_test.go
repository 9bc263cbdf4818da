package term

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)

// clock is a fixed clock the test moves.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

var sgr = regexp.MustCompile("\033\\[[0-9;]*m")

// UX-1: on a terminal the status lines of several loops stay at the
// bottom and are redrawn in place (cursor up over the block, clear to the
// end of the screen) while event lines scroll above them; the lines carry
// the round, phase, counts, elapsed time and cost.
func TestUX1_BoardRedrawsStatusLinesInPlace(t *testing.T) {
	var out bytes.Buffer
	c := &clock{now: t0}
	b := NewBoard(&out, Detect(true, func(string) string { return "" }), c.Now)
	b.Set("a", Status{Label: "o/r#1", Round: 1, Phase: "fix", Counts: []string{"3 findings", "1/4 threads resolved"}, Cost: "$0.42", Started: t0})
	b.Set("b", Status{Label: "o/r#2", Round: 2, Phase: "wait", Started: t0})
	b.Println("o/r#1  round 1  fix      fixing 3 finding(s)")
	c.now = t0.Add(65 * time.Second)
	b.Update("a", func(s *Status) { s.Round, s.Phase = 2, "review" })
	got := out.String()

	if n := strings.Count(got, "\r\033[2A\033[J"); n != 2 {
		t.Errorf("%d redraws of the two-line block (cursor up 2, clear), want 2:\n%q", n, got)
	}
	plain := sgr.ReplaceAllString(got, "")
	last := plain[strings.LastIndex(plain, "\033[J")+3:]
	for _, want := range []string{"o/r#1  round 2  review  3 findings, 1/4 threads resolved  1m05s  $0.42\033[K\n", "o/r#2  round 2  wait  1m05s\033[K\n"} {
		if !strings.Contains(last, want) {
			t.Errorf("the last drawn block lacks %q:\n%q", want, last)
		}
	}
	// The event line is printed once, above the block, never redrawn.
	if strings.Count(plain, "fixing 3 finding(s)") != 1 || strings.Index(plain, "fixing 3") > strings.LastIndex(plain, "o/r#2  round 2  wait  0s") {
		t.Errorf("the event line is not printed once above the block:\n%q", plain)
	}
	if !sgr.MatchString(got) {
		t.Errorf("no colour on a terminal without NO_COLOR:\n%q", got)
	}

	// Removing a loop's line shrinks the block.
	out.Reset()
	b.Remove("a")
	if got := out.String(); !strings.HasPrefix(got, "\r\033[2A\033[J") || strings.Contains(got, "o/r#1") || !strings.Contains(got, "o/r#2") {
		t.Errorf("remove: %q", got)
	}
}

// NO_COLOR drops every colour escape; the cursor control stays on a
// terminal.
func TestUX1_NoColorHasNoColourEscapes(t *testing.T) {
	var out bytes.Buffer
	env := map[string]string{"NO_COLOR": "1"}
	b := NewBoard(&out, Detect(true, func(k string) string { return env[k] }), func() time.Time { return t0 })
	b.Set("a", Status{Label: "o/r#1", Round: 1, Phase: "fix", Cost: "$1.00", Started: t0})
	b.Println("an event")
	b.Refresh()
	if sgr.MatchString(out.String()) {
		t.Errorf("colour escapes under NO_COLOR:\n%q", out.String())
	}
	if !strings.Contains(out.String(), "\033[1A\033[J") {
		t.Errorf("no in-place redraw on a terminal under NO_COLOR:\n%q", out.String())
	}
}

// Off a terminal, and on TERM=dumb, there is no status block and no
// escape at all: event lines only, one per line.
func TestUX1_PlainOffATerminal(t *testing.T) {
	for name, mode := range map[string]Mode{
		"pipe": Detect(false, func(string) string { return "" }),
		"dumb": Detect(true, func(k string) string { return map[string]string{"TERM": "dumb"}[k] }),
	} {
		var out bytes.Buffer
		b := NewBoard(&out, mode, func() time.Time { return t0 })
		b.Set("a", Status{Label: "o/r#1", Round: 1, Phase: "fix"})
		b.Println("event one")
		b.Update("a", func(s *Status) { s.Round = 2 })
		b.Println("event two")
		b.Refresh()
		b.Clear()
		if got := out.String(); got != "event one\nevent two\n" {
			t.Errorf("%s: %q, want the event lines only", name, got)
		}
	}
}

// A status line never wraps: a wrapped line would break the redraw.
func TestUX1_StatusLineIsClippedToTheWidth(t *testing.T) {
	var out bytes.Buffer
	mode := Detect(true, func(string) string { return "" })
	mode.Width = 30
	b := NewBoard(&out, mode, func() time.Time { return t0 })
	b.Set("a", Status{Label: "owner/repository#123", Round: 12, Phase: "review", Counts: []string{"many findings"}, Cost: "$12.00"})
	b.Set("b", Status{Label: strings.Repeat("x", 50)})
	for _, l := range strings.Split(strings.TrimSuffix(sgr.ReplaceAllString(out.String(), ""), "\n"), "\n") {
		l = strings.NewReplacer("\033[K", "", "\033[J", "", "\r", "").Replace(l)
		l = regexp.MustCompile("\033\\[[0-9]+A").ReplaceAllString(l, "")
		if n := len([]rune(l)); n > 30 {
			t.Errorf("line of %d columns, width 30: %q", n, l)
		}
	}
}

func TestElapsed(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 42 * time.Second: "42s", 185 * time.Second: "3m05s", 62 * time.Minute: "1h02m", -time.Second: "0s"} {
		if got := Elapsed(d); got != want {
			t.Errorf("Elapsed(%s) = %q, want %q", d, got, want)
		}
	}
}

// What a command prints besides the event lines (a proof, a summary)
// goes through the board too, above the block: a redraw never overwrites
// it, and a line written in parts is not split by the block.
func TestUX1_WritesGoAboveTheBlock(t *testing.T) {
	var out bytes.Buffer
	b := NewBoard(&out, Detect(true, func(k string) string { return map[string]string{"NO_COLOR": "1"}[k] }), func() time.Time { return t0 })
	b.Set("a", Status{Label: "o/r#1", Round: 1})
	out.Reset()
	fmt.Fprint(b, "proof ")
	fmt.Fprint(b, "(run r-1)\n")
	b.Refresh()
	want := "\r\033[1A\033[Jproof " + "(run r-1)\n" + "o/r#1  round 1\033[K\n" + "\r\033[1A\033[J" + "o/r#1  round 1\033[K\n"
	if got := out.String(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// An event prints its line and moves its loop's status line in one
// redraw.
func TestUX1_EventIsOneRedraw(t *testing.T) {
	var out bytes.Buffer
	b := NewBoard(&out, Detect(true, func(k string) string { return map[string]string{"NO_COLOR": "1"}[k] }), func() time.Time { return t0 })
	b.Set("a", Status{Label: "o/r#1", Round: 1, Phase: "fix"})
	out.Reset()
	b.Event("a", Status{Label: "o/r#1", Round: 2, Phase: "review"}, "round 2  round    round 2 on abc")
	want := "\r\033[1A\033[J" + "round 2  round    round 2 on abc\n" + "o/r#1  round 2  review\033[K\n"
	if got := out.String(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// A line on the other stream of the same screen (stderr) goes above the
// block as well: erased before it, drawn again after it.
func TestUX1_StderrGoesAboveTheBlock(t *testing.T) {
	var screen bytes.Buffer
	b := NewBoard(&screen, Detect(true, func(k string) string { return map[string]string{"NO_COLOR": "1"}[k] }), func() time.Time { return t0 })
	b.Set("a", Status{Label: "o/r#1", Round: 1})
	screen.Reset()
	fmt.Fprintln(b.Beside(&screen), "converge: warning")
	want := "\r\033[1A\033[J" + "converge: warning\n" + "o/r#1  round 1\033[K\n"
	if got := screen.String(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// A long phase (a wait's reason) is shortened before anything is
// dropped: the counts, elapsed time and cost stay on the line.
func TestUX1_LongPhaseIsShortenedFirst(t *testing.T) {
	var out bytes.Buffer
	mode := Detect(true, func(k string) string { return map[string]string{"NO_COLOR": "1"}[k] })
	mode.Width = 60
	b := NewBoard(&out, mode, func() time.Time { return t0.Add(5 * time.Second) })
	b.Set("a", Status{Label: "o/r#1", Round: 3, Phase: "waiting: awaiting the review bot's review of the head", Counts: []string{"4 finding(s)"}, Started: t0, Cost: "$0.10"})
	want := "o/r#1  round 3  waiting: awaiting …  4 finding(s)  5s  $0.10\033[K\n"
	if got := out.String(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// Many loops (a server's) do not make a block taller than MaxLines: the
// first ones, then how many more.
func TestUX1_BlockHeightIsBounded(t *testing.T) {
	var out bytes.Buffer
	b := NewBoard(&out, Detect(true, func(k string) string { return map[string]string{"NO_COLOR": "1"}[k] }), func() time.Time { return t0 })
	for i := range 12 {
		b.Set(fmt.Sprint(i), Status{Label: fmt.Sprintf("o/r#%d", i)})
	}
	out.Reset()
	b.Refresh()
	got := out.String()
	if !strings.HasPrefix(got, fmt.Sprintf("\r\033[%dA\033[J", MaxLines)) || strings.Count(got, "\n") != MaxLines || !strings.Contains(got, "… and 5 more loop(s)") {
		t.Errorf("block of 12 loops:\n%q", got)
	}
}
