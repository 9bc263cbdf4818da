package review

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/text"
)

// maxWhy bounds the parse error kept for the summary: it quotes agent
// output, which may be long.
const maxWhy = 200

// ParseAnswer reads an angle's answer from the agent's final message.
//
// The answer is the last non-empty line that starts with '[', and it must
// be a JSON array of
//
//	{"file": str, "line_range": [start, end], "summary": str, "verdict": "structural"|"minor"}
//
// file and line_range may be absent or null (a point about the change as a
// whole); summary must be non-empty and verdict one of the two. Reading is
// fail-closed: only a valid array counts, an empty one ("[]") is the only
// clean answer, and no output, prose, a truncated array or any element that
// breaks the contract leaves the angle not parsed. An earlier array is never
// taken instead of a broken later one: it may be an echoed example or a
// draft the agent replaced.
func ParseAnswer(angle, output string) AngleResult {
	ar := AngleResult{Angle: angle}
	line := lastArrayLine(output)
	if line == "" {
		ar.Why = "no JSON array line in the output"
		return ar
	}
	var elems []json.RawMessage
	if err := json.Unmarshal([]byte(line), &elems); err != nil || elems == nil {
		ar.Why = clip("last array line is not a JSON array: " + errText(err))
		return ar
	}
	fs := make([]Finding, 0, len(elems))
	for i, el := range elems {
		f, why := parseElement(el)
		if why != "" {
			ar.Why = clip(fmt.Sprintf("element %d: %s", i+1, why))
			return ar
		}
		f.Angle = angle
		fs = append(fs, f)
	}
	ar.Parsed = true
	if len(fs) > 0 {
		ar.Findings = fs
	}
	return ar
}

func lastArrayLine(output string) string {
	lines := strings.Split(output, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "[") {
			return l
		}
	}
	return ""
}

type rawFinding struct {
	File      *string         `json:"file"`
	LineRange json.RawMessage `json:"line_range"`
	Summary   *string         `json:"summary"`
	Verdict   *string         `json:"verdict"`
}

func parseElement(el json.RawMessage) (Finding, string) {
	if !bytes.HasPrefix(bytes.TrimSpace(el), []byte("{")) {
		return Finding{}, "not an object"
	}
	var raw rawFinding
	if err := json.Unmarshal(el, &raw); err != nil {
		return Finding{}, errText(err)
	}
	var f Finding
	if raw.Summary == nil || strings.TrimSpace(*raw.Summary) == "" {
		return Finding{}, "missing summary"
	}
	f.Summary = strings.TrimSpace(*raw.Summary)
	if raw.Verdict == nil {
		return Finding{}, "missing verdict"
	}
	switch v := strings.ToLower(strings.TrimSpace(*raw.Verdict)); v {
	case VerdictStructural, VerdictMinor:
		f.Verdict = v
	default:
		return Finding{}, fmt.Sprintf("verdict %q is neither structural nor minor", *raw.Verdict)
	}
	if raw.File != nil {
		// "./" as often as it comes ("././a.go", " ./ a.go"): the path
		// must match the diff's, and a second reading must not change it.
		f.File = strings.TrimSpace(*raw.File)
		for strings.HasPrefix(f.File, "./") {
			f.File = strings.TrimSpace(f.File[2:])
		}
	}
	if len(raw.LineRange) > 0 && string(raw.LineRange) != "null" {
		var lr []json.Number
		dec := json.NewDecoder(bytes.NewReader(raw.LineRange))
		dec.UseNumber()
		if err := dec.Decode(&lr); err != nil || len(lr) != 2 {
			return Finding{}, "line_range is not [start, end]"
		}
		var n [2]int64
		for i, x := range lr {
			v, err := x.Int64()
			if err != nil || v < 0 || v > 1<<31 {
				return Finding{}, "line_range is not [start, end] of line numbers"
			}
			n[i] = v
		}
		// A reversed range names the same lines; failing the whole angle
		// over it would hide the finding rather than protect anything.
		if n[0] > n[1] {
			n[0], n[1] = n[1], n[0]
		}
		f.StartLine, f.EndLine = int(n[0]), int(n[1])
	}
	return f, ""
}

func errText(err error) string {
	if err == nil {
		return "null"
	}
	return err.Error()
}

// clip folds s to one line of at most maxWhy characters and "…".
func clip(s string) string {
	return text.Clip(strings.Join(strings.Fields(s), " "), maxWhy+1)
}
