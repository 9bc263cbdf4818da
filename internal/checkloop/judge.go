package checkloop

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/text"
)

// verdictSchemaJSON is the judge's answer contract (LOOP-2): the last
// non-empty line of its output, one JSON object.
//
//go:embed verdict.schema.json
var verdictSchemaJSON []byte

// VerdictSchema returns the verdict's JSON Schema.
func VerdictSchema() []byte { return bytes.Clone(verdictSchemaJSON) }

var verdictSchema = agent.EmbeddedSchema("loop-verdict.json", verdictSchemaJSON)

// ParseVerdict reads a judge's verdict from its output, fail-closed: the
// last non-empty line must be a JSON object valid by the verdict schema.
// Anything else is an error, and the caller takes it as "not done" —
// never as done. line is the line read.
func ParseVerdict(output string) (v Verdict, line string, err error) {
	line = lastNonEmptyLine(output)
	if line == "" {
		return Verdict{}, "", errors.New("the judge printed nothing")
	}
	if !strings.HasPrefix(line, "{") {
		return Verdict{}, line, errors.New("the judge's last line is not a JSON object")
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
	if err != nil {
		return Verdict{}, line, fmt.Errorf("the judge's last line is not JSON: %s", text.OneLine(err.Error()))
	}
	if err := verdictSchema().Validate(inst); err != nil {
		return Verdict{}, line, fmt.Errorf("the judge's verdict fails its schema: %s", text.OneLine(err.Error()))
	}
	if err := agent.ExactKeys(inst, v); err != nil {
		return Verdict{}, line, fmt.Errorf("the judge's verdict: %s", err)
	}
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		return Verdict{}, line, fmt.Errorf("the judge's verdict: %s", text.OneLine(err.Error()))
	}
	return v, line, nil
}

// costOf reads an optional "cost_usd" number from the last line of an
// agent's output (a status record or a verdict may carry it); ok says
// the line named one.
func costOf(output string) (usd float64, ok bool) {
	var c struct {
		Cost *float64 `json:"cost_usd"`
	}
	if json.Unmarshal([]byte(lastNonEmptyLine(output)), &c) != nil || c.Cost == nil || *c.Cost < 0 {
		return 0, false
	}
	return *c.Cost, true
}

func lastNonEmptyLine(s string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}
