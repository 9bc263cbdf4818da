package prloop

import (
	"regexp"
	"strconv"
	"strings"
)

// trailerLine is one `Key: value` line as git interpret-trailers reads it.
var trailerLine = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*)$`)

// trailerValues returns the values of key (matched case-insensitively, as
// git does) in msg's trailer block. The block is the last paragraph of the
// message, and only when the message has a title paragraph before it and
// every line of that paragraph is a trailer or a continuation of one.
// A `Converge-Round: 3` written in the body, or in a last paragraph that also
// holds prose, is not a trailer: PR-T4 depends on that difference, because a
// human quoting the loop's trailer must still count as a human push.
func trailerValues(msg, key string) []string {
	msg = strings.ReplaceAll(msg, "\r\n", "\n")
	var paras [][]string
	var cur []string
	for _, line := range strings.Split(msg, "\n") {
		if strings.TrimSpace(line) == "" {
			if len(cur) > 0 {
				paras = append(paras, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, line)
	}
	if len(cur) > 0 {
		paras = append(paras, cur)
	}
	if len(paras) < 2 {
		return nil
	}
	type kv struct{ k, v string }
	var block []kv
	for _, line := range paras[len(paras)-1] {
		if line[0] == ' ' || line[0] == '\t' {
			if len(block) == 0 {
				return nil
			}
			block[len(block)-1].v += " " + strings.TrimSpace(line)
			continue
		}
		m := trailerLine.FindStringSubmatch(line)
		if m == nil {
			return nil
		}
		block = append(block, kv{m[1], strings.TrimSpace(m[2])})
	}
	var out []string
	for _, t := range block {
		if strings.EqualFold(t.k, key) {
			out = append(out, t.v)
		}
	}
	return out
}

// roundTrailer reports whether msg carries the loop's trailer and the round
// it names (0 when the value is not a number: still the loop's commit).
func roundTrailer(msg string) (int, bool) {
	vs := trailerValues(msg, CommitTrailer)
	if len(vs) == 0 {
		return 0, false
	}
	f := strings.Fields(vs[len(vs)-1])
	if len(f) == 0 {
		return 0, true
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 0, true
	}
	return n, true
}
