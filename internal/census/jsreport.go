package census

import (
	"encoding/json"
	"path/filepath"
	"strings"
)

// jsReport is the JSON report of Jest (--json) and of Vitest's json
// reporter, which writes the same shape.
type jsReport struct {
	TestResults *[]struct {
		Name             string `json:"name"`
		AssertionResults []struct {
			AncestorTitles []string `json:"ancestorTitles"`
			Title          string   `json:"title"`
			Status         string   `json:"status"`
		} `json:"assertionResults"`
	} `json:"testResults"`
}

// ParseJSReport reads a Jest or Vitest JSON report. Each assertion result
// is a test, named by its file (relative to dir, so runs in two worktrees
// agree) and its describe blocks and title. "passed" passed, "failed"
// failed, and pending, skipped, todo and disabled tests are skipped. A
// report without testResults is not a census.
func ParseJSReport(eco Ecosystem, report []byte, dir string) Census {
	var r jsReport
	if err := json.Unmarshal(report, &r); err != nil {
		return unknown(eco, "the JSON report does not parse: "+clip(err.Error()))
	}
	if r.TestResults == nil {
		return unknown(eco, "the JSON report has no testResults")
	}
	t := newTally(eco)
	for _, f := range *r.TestResults {
		file := f.Name
		if dir != "" {
			if rel, err := filepath.Rel(dir, file); err == nil && !strings.HasPrefix(rel, "..") {
				file = filepath.ToSlash(rel)
			}
		}
		for _, a := range f.AssertionResults {
			id := strings.Join(append(append([]string{file}, a.AncestorTitles...), a.Title), " > ")
			switch a.Status {
			case "passed":
				t.add(id, 'p')
			case "failed":
				t.add(id, 'f')
			case "pending", "skipped", "todo", "disabled":
				t.add(id, 's')
			default:
				// focused, or a status of a later version: reported but
				// not a verdict this census knows.
				t.add(id, 0)
			}
		}
	}
	return t.census()
}
