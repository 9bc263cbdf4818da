// Package text holds the string helpers every package shares, one per job:
// ShortSHA abbreviates a commit id, Clip shortens text to a limit, OneLine
// flattens it to one line.
package text

import (
	"strings"
	"unicode/utf8"
)

// shaLen is how many characters of a commit id messages, replies and
// commit statuses show: unambiguous in any repository converge meets.
const shaLen = 12

// ShortSHA is the first 12 characters of a commit id, or the id itself
// when it is shorter.
func ShortSHA(sha string) string {
	if len(sha) > shaLen {
		return sha[:shaLen]
	}
	return sha
}

// Clip returns s when it has at most n characters (runes), else its first
// n-1 characters and "…", so the result never exceeds n characters and
// never splits a rune. It is "" when n < 1.
func Clip(s string, n int) string {
	if n < 1 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	kept := 0
	for i := range s {
		if kept == n-1 {
			return s[:i] + "…"
		}
		kept++
	}
	return s // not reached: s has more than n runes
}

// OneLine collapses every run of white space, newlines included, to one
// space: text from agents and forges, fit for a single log or table line.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
