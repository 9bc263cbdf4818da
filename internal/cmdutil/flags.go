package cmdutil

import (
	"strings"

	"github.com/convergeloop/converge/internal/config"
)

// FieldFlag is a config field as a flag: its value is checked by the
// field itself, so a flag, the environment and the file reject the same
// values with the same words.
type FieldFlag struct {
	Field config.Field
	// Values is where a given value is kept, by the field's key.
	Values map[string]string
}

func (v *FieldFlag) String() string {
	if s, ok := v.Values[v.Field.Key]; ok {
		return s
	}
	return v.Field.Default
}

func (v *FieldFlag) Set(s string) error {
	if v.Field.Repeatable {
		// Each --agent-env names variables; an empty one names none.
		for _, n := range strings.Split(s, ",") {
			if err := config.EnvName(n); err != nil {
				return err
			}
		}
	}
	val, err := v.Field.Parse(s)
	if err != nil {
		return err
	}
	if prev := v.Values[v.Field.Key]; v.Field.Repeatable && prev != "" {
		val = prev + "," + val
	}
	v.Values[v.Field.Key] = val
	return nil
}

func (v *FieldFlag) Type() string { return v.Field.Kind.String() }
