package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSEC_4_EmptySecretVerifiesNoDelivery: a server whose webhook secret
// is empty (nil or zero-length) refuses every delivery, GitHub's and
// GitLab's, even one "signed" with that empty secret — anyone can compute
// the HMAC of a body under the empty key, and anyone can send an empty
// X-Gitlab-Token. Nothing is woken.
func TestSEC_4_EmptySecretVerifiesNoDelivery(t *testing.T) {
	body := reviewPayload(7)
	for _, secret := range [][]byte{nil, {}} {
		// GitHub: X-Hub-Signature-256 under the empty key.
		forged := Sign(secret, []byte(body))
		if err := Verify(secret, []byte(body), forged); err == nil {
			t.Errorf("Verify(%#v) accepted a body signed with the empty secret", secret)
		}
		// GitLab: the token is the secret as is; the empty one is no secret.
		if err := VerifyGitLabToken(secret, ""); err == nil {
			t.Errorf("VerifyGitLabToken(%#v) accepted the empty token", secret)
		}

		r := newRig(t, func(o *Options) { o.Secret = secret })
		if code := r.deliverSigned(t, "pull_request_review", "d-empty", forged, body); code != http.StatusUnauthorized {
			t.Errorf("secret %#v: GitHub delivery signed with the empty secret: status %d, want 401", secret, code)
		}
		r.loops.runs = []RunInfo{{Target: mr1, Head: "aaa111", Branch: "ms-viewport", Base: "master"}}
		gl := glBody(t, "merge_request.json", "object_attributes.action", "update")
		req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(gl))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(HeaderGitLabEvent, "Merge Request Hook")
		req.Header.Set(HeaderGitLabEventUUID, "u-empty")
		req.Header.Set(HeaderGitLabToken, "")
		rec := httptest.NewRecorder()
		r.srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("secret %#v: GitLab delivery with an empty token: status %d, want 401", secret, rec.Code)
		}
		r.settle()
		if w := r.loops.Wakes(); len(w) != 0 {
			t.Errorf("secret %#v: a server without a secret woke %v", secret, w)
		}
	}
}
