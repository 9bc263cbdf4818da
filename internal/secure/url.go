// Package secure keeps converge's credentials where they belong (SEC-2,
// SEC-6): which URLs a token may travel to, and, at start-up, moving the
// token out of the process's environment and command line so that agents,
// which run as the same user, cannot read it from /proc.
package secure

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// IsLoopback reports whether host (a name or an IP, without port, IPv6
// with or without brackets) is this machine: localhost, 127.0.0.0/8, ::1.
// No lookup is made: a name that merely resolves to loopback today is not
// trusted, since the token would follow whatever it resolves to tomorrow.
func IsLoopback(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// CheckTokenURL returns an error when a token must not be sent to u: over
// anything but https, except plain http to a loopback address, where
// nothing crosses a network (a local emulator). The error names the host
// and the fix, never the URL's path or credentials.
func CheckTokenURL(u *url.URL) error {
	switch strings.ToLower(u.Scheme) {
	case "https":
		return nil
	case "http":
		if IsLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("refusing to send the token over plain http to %s: use https (plain http is allowed only to a loopback address such as 127.0.0.1)", u.Host)
	}
	return fmt.Errorf("refusing to send the token to %s over %q: use https", u.Host, u.Scheme)
}

// CheckTokenURLString is CheckTokenURL for a URL not yet parsed.
func CheckTokenURLString(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("refusing to send the token to an unparseable URL")
	}
	return CheckTokenURL(u)
}
