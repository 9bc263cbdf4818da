//go:build !linux

package proc

import "os/exec"

// Supervise does nothing here: without a child subreaper and a
// parent-death signal a supervisor could not hold the family, so
// processes run as converge's own children (AG-K1 is Linux's).
func Supervise() {}

type supervisor struct{}

func supervise(_ *exec.Cmd, j *jail) (*supervisor, error) {
	if j != nil {
		return nil, ErrNoSandbox
	}
	return nil, nil
}

func (*supervisor) started() error { return nil }
func (*supervisor) abandon()       {}
func (*supervisor) stop(bool)      {}
func (*supervisor) close()         {}
func (*supervisor) ended()         {}
