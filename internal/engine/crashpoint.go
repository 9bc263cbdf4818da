package engine

import (
	"fmt"
	"reflect"

	"github.com/convergeloop/converge/internal/crashpoint"
)

// REL-2's crash boundaries in the engine: before and after each act and
// each journal save (package crashpoint) of a step that does not wait. A
// step that waits is a poll: what it saves and re-asks for (work still in
// flight, a retry) depends on how many polls the wait takes, which is
// timing; the matrix numbers boundaries alike in every run of the same
// script. A write such a step makes is still a boundary at the forge.

// crashSave passes the boundary before (after=false) or after saving a
// step's state, and reports whether the step is a poll.
func crashSave[A Action](actions []A, done, after bool) (poll bool) {
	if !crashpoint.Armed() {
		return false
	}
	if !done && waits(actions) {
		return true
	}
	crashpoint.Hit("engine save: " + when(after))
	return false
}

// crashAct passes the boundary before or after an act of a step that is
// not a poll.
func crashAct[A Action](a *A, poll, after bool) {
	if !crashpoint.Armed() || poll {
		return
	}
	crashpoint.Hit(fmt.Sprintf("engine act %s: %s", actionKind(*a), when(after)))
}

func waits[A Action](actions []A) bool {
	for i := range actions {
		if _, ok := actions[i].Wait(); ok {
			return true
		}
	}
	return false
}

// actionKind is the action's Kind field when it has one (every loop
// kind's action does), else its type.
func actionKind(a any) string {
	v := reflect.Indirect(reflect.ValueOf(a))
	if v.Kind() == reflect.Struct {
		if k := v.FieldByName("Kind"); k.IsValid() {
			return fmt.Sprint(k.Interface())
		}
	}
	return fmt.Sprintf("%T", a)
}

func when(after bool) string {
	if after {
		return "after"
	}
	return "before"
}
