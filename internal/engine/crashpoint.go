package engine

import (
	"fmt"
	"reflect"

	"github.com/convergeloop/converge/internal/crashpoint"
)

// REL-2's crash boundaries in the engine: before and after each act and
// each journal save (package crashpoint). A save that only re-records an
// unchanged state before a wait is no boundary: how many polls a wait
// takes depends on timing, and the matrix numbers boundaries alike in
// every run of the same script.

// crashAct passes the boundary before (after=false) or after an act.
func crashAct[A Action](a *A, after bool) {
	if !crashpoint.Armed() {
		return
	}
	crashpoint.Hit(fmt.Sprintf("engine act %s: %s", actionKind(*a), when(after)))
}

// crashSave passes the boundary before or after saving next, unless the
// step only waits on an unchanged state.
func crashSave[S any, A Action](prev, next S, actions []A, done, after bool) {
	if !crashpoint.Armed() || (!done && onlyWaits(actions) && reflect.DeepEqual(prev, next)) {
		return
	}
	crashpoint.Hit("engine save: " + when(after))
}

func onlyWaits[A Action](actions []A) bool {
	for i := range actions {
		if _, ok := actions[i].Wait(); !ok {
			return false
		}
	}
	return true
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
