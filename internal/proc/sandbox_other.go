//go:build !linux

package proc

import (
	"errors"
	"os"
	"os/exec"
)

func probe() error { return errors.New("containment needs Linux namespaces") }

func jailCmd(*exec.Cmd, *jail) error { return errors.New("containment needs Linux namespaces") }

func startJailed(path string, argv []string, attr *os.ProcAttr) (*os.Process, error) {
	return os.StartProcess(path, argv, attr)
}
