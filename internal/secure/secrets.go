package secure

import (
	"slices"
	"strings"
	"sync"
)

// Redacted replaces a secret in redacted text.
const Redacted = "[REDACTED]"

// Secrets is a set of secrets that grows while a process runs (SEC-3):
// a GitHub App's installation tokens are minted hour after hour, each
// added as it is minted, so that a redaction made of the set removes
// the tokens minted after start as well as the first. Safe for
// concurrent use; the zero value is empty, and a nil *Secrets redacts
// nothing.
type Secrets struct {
	mu   sync.RWMutex
	list []string
	rep  *strings.Replacer
}

// Add adds each non-blank value.
func (s *Secrets) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if strings.TrimSpace(v) != "" && !slices.Contains(s.list, v) {
			s.list = append(s.list, v)
			s.rep = nil
		}
	}
}

// List is the secrets added so far.
func (s *Secrets) List() []string {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.list)
}

// Redact replaces every secret added so far in v with Redacted, longest
// first, so that a secret holding another is removed whole.
func (s *Secrets) Redact(v string) string {
	if s == nil {
		return v
	}
	s.mu.RLock()
	rep := s.rep
	s.mu.RUnlock()
	if rep == nil {
		s.mu.Lock()
		if s.rep == nil {
			sorted := slices.Clone(s.list)
			slices.SortFunc(sorted, func(a, b string) int { return len(b) - len(a) })
			pairs := make([]string, 0, 2*len(sorted))
			for _, sec := range sorted {
				pairs = append(pairs, sec, Redacted)
			}
			s.rep = strings.NewReplacer(pairs...)
		}
		rep = s.rep
		s.mu.Unlock()
	}
	return rep.Replace(v)
}
