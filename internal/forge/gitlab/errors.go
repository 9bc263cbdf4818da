package gitlab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/forgehttp"
)

// ErrReviewerUnavailable is wrapped by RequestReviews when a login names
// no GitLab user that can be requested.
var ErrReviewerUnavailable = errors.New("reviewer not available")

func (c *Client) redact(s string) string {
	if c.token != "" {
		s = strings.ReplaceAll(s, c.token, "[REDACTED]")
	}
	return s
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func (c *Client) fail(kind forge.ErrorKind, op, msg string, err error) *forge.Error {
	fe := &forge.Error{Kind: kind, Op: op, Msg: c.redact(msg)}
	if err != nil {
		re := &redactedError{msg: c.redact(err.Error()), err: err}
		if re.msg != err.Error() {
			re.err = nil // the chain says the token: cut it
		}
		fe.Err = re
	}
	return fe
}

// mapErr turns a REST or transport failure into a *forge.Error (IF-1):
// 401 auth, 403 auth, 404 not found, 400/409/422 invalid, 429 rate
// limited, 5xx and network faults unreachable.
func (c *Client) mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var fe *forge.Error
	if errors.As(err, &fe) {
		return err
	}
	host := c.restURL.Host
	var ae *apiError
	if errors.As(err, &ae) {
		return c.statusErr(op, ae.status, ae.message, ae.header, err)
	}
	var le *forgehttp.HostLimitedError
	if errors.As(err, &le) {
		return c.fail(forge.KindRateLimited, op, le.Error(), nil)
	}
	if errors.Is(err, context.Canceled) || (errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, forgehttp.ErrAttemptTimeout)) {
		return fmt.Errorf("%s: %w", op, err)
	}
	if msg, ok := netMessage(err); ok {
		return c.fail(forge.KindUnreachable, op, fmt.Sprintf("cannot reach %s://%s: %s; check --api-url", c.restURL.Scheme, host, msg), err)
	}
	return c.fail(forge.KindOther, op, err.Error(), err)
}

func (c *Client) statusErr(op string, status int, msg string, h http.Header, err error) error {
	host := c.restURL.Host
	if msg == "" {
		msg = http.StatusText(status)
	}
	switch {
	case status == http.StatusUnauthorized:
		return c.fail(forge.KindAuth, op, fmt.Sprintf("token rejected by %s: %s; check the token (--token, GITLAB_TOKEN, GL_TOKEN) is valid for this host", host, msg), err)
	case status == http.StatusTooManyRequests:
		note := ""
		if ra := h.Get("Retry-After"); ra != "" {
			note = "; retry after " + ra + "s"
		}
		return c.fail(forge.KindRateLimited, op, fmt.Sprintf("rate limited by %s: %s%s", host, msg, note), err)
	case status == http.StatusForbidden:
		return c.fail(forge.KindAuth, op, fmt.Sprintf("token rejected by %s: %s; the token may lack the api scope or access to this project", host, msg), err)
	case status == http.StatusNotFound || status == http.StatusGone:
		return c.fail(forge.KindNotFound, op, fmt.Sprintf("not found on %s: %s (or the token cannot see it)", host, msg), err)
	case status == http.StatusBadRequest || status == http.StatusConflict || status == http.StatusUnprocessableEntity:
		return c.fail(forge.KindInvalid, op, fmt.Sprintf("%s refused the request: %s", host, msg), err)
	case status >= 500:
		return c.fail(forge.KindUnreachable, op, fmt.Sprintf("%s answered %d %s and kept failing; try again later", host, status, msg), err)
	}
	return c.fail(forge.KindOther, op, fmt.Sprintf("%s answered %d: %s", host, status, msg), err)
}

func statusOf(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status
	}
	return 0
}

func netMessage(err error) (string, bool) {
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var verify *tls.CertificateVerificationError
	var dns *net.DNSError
	var op *net.OpError
	var ne net.Error
	var ue *url.Error
	switch {
	case errors.As(err, &unknownCA):
		return "certificate signed by an unknown authority; pass --ca-file or set SSL_CERT_FILE", true
	case errors.As(err, &hostErr):
		return "TLS certificate does not match the host", true
	case errors.As(err, &verify):
		return "TLS verification failed (" + verify.Err.Error() + ")", true
	case errors.As(err, &dns):
		return "DNS lookup of " + dns.Name + " failed (" + dns.Err + ")", true
	case errors.Is(err, forgehttp.ErrAttemptTimeout):
		return "request timed out", true
	case errors.As(err, &op):
		return op.Op + ": " + op.Err.Error(), true
	case errors.As(err, &ne) && ne.Timeout():
		return "request timed out", true
	case errors.As(err, &ue):
		return ue.Err.Error(), true
	}
	return "", false
}
