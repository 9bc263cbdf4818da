package repo

import (
	"errors"
	"os"
)

// pipeFile is a pipe's reading end holding b, its writing end closed:
// where memory files are not (credentialFile), git's helper reads the
// credential once from it.
func pipeFile(b []byte) (*os.File, error) {
	if len(b) > 4096 {
		return nil, errors.New("credential too long for a pipe")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = w.Write(b)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}
