package gitlab

import (
	"bytes"
	"context"
	"net/http"
	"testing"
)

// TestREL_2_CrashBoundaryNames: the boundaries converge's GitLab client
// passes are named as the GitHub client's, so a scenario that crashes
// "right after the thread replies" names one boundary on both forges.
func TestREL_2_CrashBoundaryNames(t *testing.T) {
	ctx := context.Background()
	gql, _ := http.NewRequestWithContext(asWrite(ctx), http.MethodPost, "https://gitlab.example.com/api/graphql",
		bytes.NewReader([]byte(`{"query":"mutation BatchReply($i0: CreateNoteInput!) { m0: createNote(input: $i0) { errors } }","operationName":"BatchReply"}`)))
	rest, _ := http.NewRequestWithContext(ctx, http.MethodPut, "https://gitlab.example.com"+pMR+"/discussions/abc?resolved=true", nil)
	read, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://gitlab.example.com"+pMR, nil)
	for _, tc := range []struct {
		req   *http.Request
		name  string
		write bool
	}{
		{gql, "graphql BatchReply", true},
		{rest, "PUT " + pMR + "/discussions/abc", true},
		{read, "", false},
	} {
		name, write := writeName(tc.req)
		if name != tc.name || write != tc.write {
			t.Errorf("%s %s: writeName = %q, %v; want %q, %v", tc.req.Method, tc.req.URL, name, write, tc.name, tc.write)
		}
	}
	if got := "forge " + firstOf(writeName(gql)) + ": after"; got != "forge graphql BatchReply: after" {
		t.Errorf("the reply batch's boundary is %q", got)
	}
}

func firstOf(s string, _ bool) string { return s }
