package forge

import "errors"

// ErrorKind classifies forge failures so callers (and the CLI's exit codes,
// IF-1) can tell authentication from reachability from bad input.
type ErrorKind int

const (
	KindOther       ErrorKind = iota
	KindAuth                  // token missing, rejected or lacking scope (exit 6)
	KindUnreachable           // DNS, connect, TLS, timeout, or a fault that persisted (exit 7)
	KindNotFound              // the PR, repo or thread does not exist
	KindInvalid               // the forge refused the request as invalid (422, GraphQL errors)
	KindRateLimited           // primary or secondary rate limit that outlasted retries
)

func (k ErrorKind) String() string {
	switch k {
	case KindAuth:
		return "auth"
	case KindUnreachable:
		return "unreachable"
	case KindNotFound:
		return "not-found"
	case KindInvalid:
		return "invalid"
	case KindRateLimited:
		return "rate-limited"
	}
	return "other"
}

// Error is a forge failure with its kind. Msg must never contain a token.
type Error struct {
	Kind ErrorKind
	Op   string // short lowercase context, e.g. "observe pr"
	Msg  string // one line: what happened and how to fix it
	Err  error
}

func (e *Error) Error() string {
	s := e.Op
	if e.Msg != "" {
		if s != "" {
			s += ": "
		}
		s += e.Msg
	}
	if e.Err != nil && e.Msg == "" {
		if s != "" {
			s += ": "
		}
		s += e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of the first *Error in err's chain, or KindOther.
func KindOf(err error) ErrorKind {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Kind
	}
	return KindOther
}
