package labtest

import (
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakelab"
)

func TestStartAndClient(t *testing.T) {
	lab := Start(t, time.Millisecond)
	u, _, err := Client(t, lab, lab.Tokens().Reviewer).Users.CurrentUser()
	if err != nil || u.Username != fakelab.UserReviewer {
		t.Fatalf("current user %+v %v", u, err)
	}
}
