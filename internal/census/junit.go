package census

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
)

// ParseJUnit reads a JUnit XML report as pytest writes it
// (--junitxml=FILE): each <testcase classname name> is a test, failed when
// it holds <failure> or <error>, skipped when it holds <skipped>, passed
// otherwise. A report that is not well-formed XML, or has no <testsuite>,
// is not a census.
func ParseJUnit(eco Ecosystem, report []byte) Census {
	t := newTally(eco)
	d := xml.NewDecoder(bytes.NewReader(report))
	d.Strict = true
	suites := 0
	var (
		in      bool // inside a <testcase>
		depth   int  // element depth inside it
		id      string
		outcome byte
	)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return unknown(eco, "the JUnit report is not well-formed XML: "+clip(err.Error()))
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if in {
				depth++
				if depth == 1 {
					switch el.Name.Local {
					case "failure", "error":
						outcome = 'f'
					case "skipped":
						if outcome != 'f' {
							outcome = 's'
						}
					}
				}
				continue
			}
			switch el.Name.Local {
			case "testsuite":
				suites++
			case "testcase":
				var class, name string
				for _, a := range el.Attr {
					switch a.Name.Local {
					case "classname":
						class = a.Value
					case "name":
						name = a.Value
					}
				}
				id = name
				if class != "" {
					id = class + "::" + name
				}
				in, depth, outcome = true, 0, 'p'
			}
		case xml.EndElement:
			if !in {
				continue
			}
			if depth > 0 {
				depth--
				continue
			}
			t.add(id, outcome)
			in = false
		}
	}
	if suites == 0 {
		return unknown(eco, "the JUnit report has no <testsuite>")
	}
	if in {
		return unknown(eco, "the JUnit report ends inside a <testcase>")
	}
	return t.census()
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return strings.TrimSpace(s)
}
