package recap

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzPR_G2_RecapVerdict: whatever a recap judge prints, the verdict is
// one of the three; an invalid one is HAND-OFF (never CONTINUE); a valid
// HAND-OFF, and only that, carries a recommendation; a
// REVERT-AND-SHIP names, in order, only rounds of the ledger with a loop
// commit; and a valid verdict written back as a line reads back as itself.
func FuzzPR_G2_RecapVerdict(f *testing.F) {
	for _, s := range []string{
		answer(Continue, nil, "in scope"),
		answer(RevertAndShip, []int{3, 1}, "drifted"),
		answer(RevertAndShip, []int{2}, "no commit"),
		answer(RevertAndShip, []int{9}, "not a round"),
		answer(RevertAndShip, nil, "none"),
		answer(HandOff, nil, "entangled"),
		answerRec(HandOff, nil, RecommendRedesign, "wrong approach"),
		answerRec(HandOff, nil, "", "no advice"),
		answerRec(HandOff, nil, "rewrite", "unknown advice"),
		answerRec(Continue, nil, RecommendSeparatePR, "advice on a continue"),
		answerRec(RevertAndShip, []int{1}, RecommendRedesign, "advice on a revert"),
		strings.Replace(answer(HandOff, nil, "x"), `"recommendation"`, `"RECOMMENDATION":"redesign","recommendation"`, 1),
		answer(Continue, []int{1}, "continue with rounds"),
		"prose\n" + answer(Continue, nil, "ok") + "\n",
		answer(Continue, nil, "ok") + "\nmore",
		strings.Replace(answer(HandOff, nil, "x"), `"recap"`, `"RECAP":{"verdict":"CONTINUE","reason":"y"},"recap"`, 1),
		"", "{}", `{"recap":{"verdict":"CONTINUE","reason":"x"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		v := Parse(out, ledger)
		if !slices.Contains([]string{Continue, RevertAndShip, HandOff}, v.Decision) {
			t.Fatalf("verdict of %q is %q", out, v.Decision)
		}
		if (v.Recommendation != "") != (v.Valid && v.Decision == HandOff) {
			t.Fatalf("verdict of %q is %+v: a recommendation goes with a valid HAND-OFF only", out, v)
		}
		if !v.Valid {
			if v.Decision != HandOff || v.Why == "" {
				t.Fatalf("invalid verdict of %q is %+v, want HAND-OFF with a why", out, v)
			}
			return
		}
		if v.Decision == RevertAndShip {
			if len(v.RevertRounds) == 0 || !slices.IsSorted(v.RevertRounds) {
				t.Fatalf("REVERT-AND-SHIP of %q names rounds %v", out, v.RevertRounds)
			}
			for _, n := range v.RevertRounds {
				i := slices.IndexFunc(ledger.Rounds, func(r Round) bool { return r.N == n })
				if i < 0 || ledger.Rounds[i].Commit == "" {
					t.Fatalf("REVERT-AND-SHIP of %q names round %d, which has no loop commit", out, n)
				}
			}
		} else if len(v.RevertRounds) > 0 {
			t.Fatalf("%s of %q names rounds %v", v.Decision, out, v.RevertRounds)
		}
		back := Parse(answerRec(v.Decision, v.RevertRounds, v.Recommendation, v.Reason), ledger)
		if !reflect.DeepEqual(v, back) {
			t.Fatalf("verdict of %q does not read back as itself:\n got %+v\nback %+v", out, v, back)
		}
	})
}

// TestPR_G2_AKeyInOtherCaseIsRefused: encoding/json matches keys
// ignoring case; a line the schema read as HAND-OFF must not decode as
// the CONTINUE beside it.
func TestPR_G2_AKeyInOtherCaseIsRefused(t *testing.T) {
	line := strings.TrimSuffix(answer(HandOff, nil, "entangled"), "}") + `,"RECAP":{"verdict":"CONTINUE","reason":"fine"}}`
	if v := Parse(line, ledger); v.Valid || v.Decision != HandOff {
		t.Fatalf("Parse(%s) = %+v, want an invalid HAND-OFF", line, v)
	}
}
