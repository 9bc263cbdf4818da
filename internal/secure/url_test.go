package secure

import (
	"net/url"
	"strings"
	"testing"
)

func TestSEC6_TokenOnlyOverHTTPSOrLoopback(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://api.github.com", true},
		{"https://ghe.example.com/api/v3", true},
		{"https://ghe.example.com:8443/o/r.git", true},
		{"http://127.0.0.1:8080/api/v3", true},
		{"http://127.1.2.3/api/v3", true},
		{"http://localhost:8080/o/r.git", true},
		{"http://LOCALHOST./x", true},
		{"http://[::1]:8080/api/graphql", true},
		{"http://ghe.example.com/api/v3", false},
		{"http://10.0.0.1:8080/api/v3", false},
		{"http://localhost.example.com/x", false},
		{"http://127.0.0.1.nip.io/x", false},
		{"http://[::ffff:10.0.0.1]/x", false},
		{"http://0.0.0.0:8080/x", false},
		{"ftp://ghe.example.com/x", false},
		{"git://github.com/o/r.git", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckTokenURL(u)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckTokenURL(%s) = %v, want ok=%v", tt.url, err, tt.ok)
			}
			if err != nil && !strings.Contains(err.Error(), u.Host) {
				t.Errorf("error %q does not name the host", err)
			}
			if serr := CheckTokenURLString(tt.url); (serr == nil) != tt.ok {
				t.Errorf("CheckTokenURLString disagrees: %v", serr)
			}
		})
	}
	if err := CheckTokenURLString("git@github.com:o/r.git"); err == nil {
		t.Error("an scp-style remote passed")
	}
	if err := CheckTokenURLString("http://x-access-token:s3cr3t@ghe.example.com/o/r.git"); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("err = %v: want a refusal without the URL's password", err)
	}
}
