package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/store"
)

// UX-2, SEC-4: converge serve shows the dashboard at /dashboard/ beside
// its own endpoints, under the server's loopback rule and token.
func TestUX_2_ServeMountsDashboard(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "server") })
	get := func(h http.Handler, path, auth string) (int, string) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "127.0.0.1:8765"
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	h, closeDash, err := mountDashboard(next, db, "127.0.0.1:8765", "")
	if err != nil {
		t.Fatal(err)
	}
	defer closeDash()
	if code, body := get(h, "/dashboard/api/runs", ""); code != http.StatusOK || strings.TrimSpace(body) != "[]" {
		t.Errorf("/dashboard/api/runs = %d %q", code, body)
	}
	if code, body := get(h, "/dashboard/", ""); code != http.StatusOK || !strings.Contains(body, `src="app.js"`) {
		t.Errorf("/dashboard/ = %d %q", code, body)
	}
	if code, body := get(h, "/healthz", ""); code != http.StatusOK || body != "server" {
		t.Errorf("/healthz = %d %q: the server's routes must stay the server's", code, body)
	}

	off, closeOff, err := mountDashboard(next, db, "0.0.0.0:8765", "tok")
	if err != nil {
		t.Fatal(err)
	}
	defer closeOff()
	if code, _ := get(off, "/dashboard/api/runs", ""); code != http.StatusUnauthorized {
		t.Errorf("off loopback without the token: %d, want 401", code)
	}
	if code, _ := get(off, "/dashboard/api/runs", "tok"); code != http.StatusOK {
		t.Errorf("off loopback with the token: %d, want 200", code)
	}
}
