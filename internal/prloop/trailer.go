package prloop

import (
	"strconv"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/repo"
)

// trailerValues returns the values of key (matched case-insensitively, as
// git does) in msg's final trailer block, by git's own rules (repo's
// parser is checked against git interpret-trailers). A `Converge-Round: 3`
// written in the body is not a trailer: PR-T4 depends on that difference,
// because a human quoting the loop's trailer must still count as a human
// push.
func trailerValues(msg, key string) []string {
	var out []string
	for _, t := range repo.ParseTrailers(msg) {
		if strings.EqualFold(t.Key, key) {
			out = append(out, t.Value)
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

// addressedInGit maps each thread id named by a loop commit's
// Converge-Addressed trailer on the branch to that commit (the newest
// wins). Commits without the loop's round trailer are not believed.
func addressedInGit(pr *forge.PullRequest) map[string]string {
	out := map[string]string{}
	for _, c := range pr.Commits {
		if _, ok := roundTrailer(c.Message); !ok {
			continue
		}
		for _, id := range trailerValues(c.Message, AddressedTrailer) {
			out[id] = c.SHA
		}
	}
	return out
}
