package command

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Preflight checks, before anything is written anywhere, that the program
// a command line (run as `sh -c CMDLINE`) starts exists and can be run
// (AG-T4: a missing binary is a pre-flight failure, not a disposition of
// every finding). It looks at the first word after any leading VAR=value
// assignments: a word with a slash is a path, relative to the current
// directory; any other is looked up in PATH. Words the shell gives meaning
// to itself — builtins, keywords, expansions — cannot be checked without
// running the line, so they pass. The error is one line naming the
// program and how to fix it.
func Preflight(cmdline string) error {
	word, _, _, ok := firstProgram(cmdline)
	if !ok {
		return nil
	}
	if strings.Contains(word, "/") {
		path := word
		if rest, ok := strings.CutPrefix(word, "~/"); ok {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil
			}
			path = filepath.Join(home, rest)
		}
		info, err := os.Stat(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("agent program %q not found (a relative path is taken from the current directory); check the path", word)
		case err != nil:
			return fmt.Errorf("agent program %q cannot be read: %v; check the path", word, err)
		case info.IsDir():
			return fmt.Errorf("agent program %q is a directory; name the program inside it", word)
		case info.Mode().Perm()&0o111 == 0:
			return fmt.Errorf("agent program %q is not executable; run chmod +x %s, or start --agent-cmd with its interpreter (e.g. sh %s)", word, word, word)
		}
		return nil
	}
	if _, err := exec.LookPath(word); err != nil {
		return fmt.Errorf("agent program %q not found in PATH; install it or give its full path", word)
	}
	return nil
}

// AbsProgram returns cmdline with its first program made absolute when it
// is a relative path. The command runs in the PR's worktree, not where
// converge was started, and Preflight checked the path from here: without
// this a relative program that passed the check would not be found.
func AbsProgram(cmdline string) string {
	word, start, end, ok := firstProgram(cmdline)
	if !ok || !strings.Contains(word, "/") || filepath.IsAbs(word) || strings.HasPrefix(word, "~/") {
		return cmdline
	}
	abs, err := filepath.Abs(word)
	if err != nil {
		return cmdline
	}
	return cmdline[:start] + "'" + strings.ReplaceAll(abs, "'", `'\''`) + "'" + cmdline[end:]
}

// firstProgram is the first word of cmdline the shell would run as a
// program, unquoted, and where it stands in cmdline; ok is false when
// there is none that can be checked without running the shell.
func firstProgram(cmdline string) (word string, start, end int, ok bool) {
	pos := 0
	for {
		w, after, found := nextWord(cmdline[pos:])
		if !found {
			return "", 0, 0, false
		}
		end = len(cmdline) - len(after)
		start = pos + len(cmdline[pos:]) - len(strings.TrimLeft(cmdline[pos:], " \t\n"))
		pos = end
		if isAssignment(w) {
			continue
		}
		if shellOwn[w] || strings.ContainsAny(w, "$`*?[") {
			return "", 0, 0, false
		}
		return w, start, end, true
	}
}

// nextWord reads one shell word with its quotes removed. It gives up (ok
// false) on what it does not model — an unterminated quote, or an
// operator where a word should be — rather than guess.
func nextWord(s string) (word, rest string, ok bool) {
	s = strings.TrimLeft(s, " \t\n")
	var b strings.Builder
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			return b.String(), s[i:], b.Len() > 0
		case strings.IndexByte(";&|<>()", c) >= 0:
			return b.String(), s[i:], b.Len() > 0
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", "", false
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
			continue
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 || strings.ContainsAny(s[i+1:i+1+j], "$`\\") {
				return "", "", false
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
			continue
		case c == '\\':
			if i+1 >= len(s) {
				return "", "", false
			}
			b.WriteByte(s[i+1])
			i += 2
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), "", b.Len() > 0
}

// isAssignment reports whether word is NAME=value, which the shell takes
// as an environment assignment for the program that follows.
func isAssignment(word string) bool {
	name, _, ok := strings.Cut(word, "=")
	if !ok || name == "" {
		return false
	}
	for i, c := range name {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// shellOwn are words sh runs itself, never looked up in PATH.
var shellOwn = map[string]bool{
	"!": true, "{": true, "}": true, "if": true, "for": true, "while": true, "until": true, "case": true,
	".": true, ":": true, "alias": true, "break": true, "cd": true, "command": true, "continue": true,
	"eval": true, "exec": true, "exit": true, "export": true, "false": true, "getopts": true, "hash": true,
	"local": true, "printf": true, "echo": true, "pwd": true, "read": true, "readonly": true, "return": true,
	"set": true, "shift": true, "source": true, "test": true, "[": true, "times": true, "trap": true,
	"true": true, "type": true, "ulimit": true, "umask": true, "unset": true, "wait": true,
}
