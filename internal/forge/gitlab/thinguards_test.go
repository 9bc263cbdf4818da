package gitlab

import (
	"context"
	"fmt"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
)

// TestSEC_1_InactiveMembershipIsNotTrusted: an active user whose
// membership of the project is not active — awaiting approval (GitLab's
// user cap, a pending invitation), blocked, or any state but "active" —
// has no access yet, whatever access_level the membership names: none of
// that user's comments drive a fix. An active membership (and an older
// GitLab that names no state) is read by its level.
func TestSEC_1_InactiveMembershipIsNotTrusted(t *testing.T) {
	reg := httpmock.New(t)
	states := []struct{ login, state string }{
		{"waiting", "awaiting"}, {"blockedmember", "blocked"},
		{"member", "active"}, {"legacy", ""},
	}
	for i, m := range states {
		id := 300 + i
		stub(reg, "GET", "/api/v4/users", "username="+m.login, ok([]any{map[string]any{"id": id, "username": m.login, "state": "active"}}))
		member := map[string]any{"id": id, "username": m.login, "access_level": 40}
		if m.state != "" {
			member["state"] = m.state
		}
		stub(reg, "GET", fmt.Sprintf("%s/members/all/%d", pProject, id), "", ok(member))
	}
	c, _ := newTestClient(t, reg)
	want := map[string]forge.Permission{"waiting": forge.PermNone, "blockedmember": forge.PermNone,
		"member": forge.PermMaintain, "legacy": forge.PermMaintain}
	for _, m := range states {
		if got, err := c.Permission(context.Background(), testRef, m.login); err != nil || got != want[m.login] {
			t.Errorf("Permission(%s), membership state %q = %q, %v; want %q", m.login, m.state, got, err, want[m.login])
		}
	}
}
