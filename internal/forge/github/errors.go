package github

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	gh "github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/forgehttp"
)

// ErrReviewerUnavailable is wrapped by RequestReviews when GitHub refuses
// the request itself (GraphQL errors): the bot or user cannot be requested
// on this repository, e.g. Copilot review is not enabled.
var ErrReviewerUnavailable = errors.New("reviewer not available")

// redactor keeps the token out of every message (SEC-3), including text a
// server or a lower layer chose to echo.
type redactor struct {
	secrets []string
	// live, when set, adds the secrets known now: a GitHub App's tokens,
	// minted as the run goes (SEC-5).
	live func() []string
}

func (r redactor) redact(s string) string {
	all := r.secrets
	if r.live != nil {
		all = append(slices.Clone(all), r.live()...)
	}
	for _, t := range all {
		if t != "" {
			s = strings.ReplaceAll(s, t, "[REDACTED]")
		}
	}
	return s
}

// leaks reports whether any error in err's tree says a secret.
func (r redactor) leaks(err error) bool {
	if err == nil {
		return false
	}
	if r.redact(err.Error()) != err.Error() {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return r.leaks(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if r.leaks(e) {
				return true
			}
		}
	}
	return false
}

// redactedError shows a redacted message. It keeps the chain for errors.As
// only when nothing in it says the token; otherwise the chain is cut.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func (c *Client) fail(kind forge.ErrorKind, op, msg string, err error) *forge.Error {
	fe := &forge.Error{Kind: kind, Op: op, Msg: c.redact.redact(msg)}
	if err != nil {
		re := &redactedError{msg: c.redact.redact(err.Error()), err: err}
		if c.redact.leaks(err) {
			re.err = nil
		}
		fe.Err = re
	}
	return fe
}

// mapErr turns a transport, go-github or GraphQL failure into *forge.Error
// with a message that says what to do.
func (c *Client) mapErr(op string, host *url.URL, err error) error {
	if err == nil {
		return nil
	}
	var fe *forge.Error
	if errors.As(err, &fe) {
		return err
	}
	origin := host.Scheme + "://" + host.Host
	var le *forgehttp.HostLimitedError
	if errors.As(err, &le) {
		return c.fail(forge.KindRateLimited, op, le.Error(), nil)
	}

	var rle *gh.RateLimitError
	if errors.As(err, &rle) {
		return c.fail(forge.KindRateLimited, op, fmt.Sprintf("rate limit of %s spent%s", host.Host, resetNote(rle.Rate.Reset.Time)), err)
	}
	var arle *gh.AbuseRateLimitError
	if errors.As(err, &arle) {
		note := ""
		if arle.RetryAfter != nil {
			note = fmt.Sprintf("; retry after %s", arle.RetryAfter.Round(time.Second))
		}
		return c.fail(forge.KindRateLimited, op, fmt.Sprintf("secondary rate limit of %s hit%s", host.Host, note), err)
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return c.statusErr(op, host, er.Response.StatusCode, restMessage(er), er.Response.Header, err)
	}
	// go-github gives a 401 with "X-GitHub-Otp: required" its own type;
	// it is a rejected credential like any 401 (REL-4: recorded answer).
	var tfa *gh.TwoFactorAuthError
	if errors.As(err, &tfa) && tfa.Response != nil {
		return c.statusErr(op, host, tfa.Response.StatusCode, restMessage((*gh.ErrorResponse)(tfa)), tfa.Response.Header, err)
	}

	// The caller's own cancellation or deadline is not the forge's fault.
	if errors.Is(err, context.Canceled) || (errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, forgehttp.ErrAttemptTimeout)) {
		return fmt.Errorf("%s: %w", op, err)
	}
	if msg, ok := netMessage(err); ok {
		return c.fail(forge.KindUnreachable, op, fmt.Sprintf("cannot reach %s: %s; check --api-url", origin, msg), err)
	}
	return c.fail(forge.KindOther, op, err.Error(), err)
}

// statusErr maps an HTTP error status (REST or GraphQL).
func (c *Client) statusErr(op string, host *url.URL, status int, msg string, h http.Header, err error) error {
	if msg == "" {
		msg = http.StatusText(status)
	}
	switch {
	case status == http.StatusUnauthorized:
		return c.fail(forge.KindAuth, op, fmt.Sprintf("token rejected by %s: %s; check the token (--token, CONVERGE_TOKEN) is valid for this host", host.Host, msg), err)
	case (status == http.StatusForbidden || status == http.StatusTooManyRequests) &&
		(h.Get("Retry-After") != "" || h.Get("X-Ratelimit-Remaining") == "0" || status == http.StatusTooManyRequests ||
			strings.Contains(strings.ToLower(msg), "rate limit")):
		note := ""
		if reset, ok := rateReset(h); ok && h.Get("X-Ratelimit-Remaining") == "0" {
			note = resetNote(reset)
		} else if ra := h.Get("Retry-After"); ra != "" {
			note = "; retry after " + ra + "s"
		}
		return c.fail(forge.KindRateLimited, op, fmt.Sprintf("rate limited by %s: %s%s", host.Host, msg, note), err)
	case status == http.StatusForbidden:
		return c.fail(forge.KindAuth, op, fmt.Sprintf("token rejected by %s: %s; the token may lack a scope or access to this repository", host.Host, msg), err)
	case status == http.StatusNotFound || status == http.StatusGone:
		return c.fail(forge.KindNotFound, op, fmt.Sprintf("not found on %s: %s", host.Host, msg), err)
	case status == http.StatusUnprocessableEntity || status == http.StatusBadRequest:
		return c.fail(forge.KindInvalid, op, fmt.Sprintf("%s refused the request: %s", host.Host, msg), err)
	case status >= 500:
		return c.fail(forge.KindUnreachable, op, fmt.Sprintf("%s answered %d %s and kept failing; try again later", host.Host, status, msg), err)
	}
	return c.fail(forge.KindOther, op, fmt.Sprintf("%s answered %d: %s", host.Host, status, msg), err)
}

func restMessage(er *gh.ErrorResponse) string {
	msg := er.Message
	var details []string
	for _, e := range er.Errors {
		switch {
		case e.Message != "":
			details = append(details, e.Message)
		case e.Code != "":
			details = append(details, strings.TrimSpace(e.Resource+" "+e.Field+" "+e.Code))
		}
	}
	if len(details) > 0 {
		msg += " (" + strings.Join(details, "; ") + ")"
	}
	return msg
}

func resetNote(reset time.Time) string {
	if reset.IsZero() {
		return ""
	}
	return "; resets at " + reset.UTC().Format(time.RFC3339)
}

// netMessage names a connection-level fault in words a user can act on.
func netMessage(err error) (string, bool) {
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var dns *net.DNSError
	var op *net.OpError
	var ne net.Error
	var rh tls.RecordHeaderError
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &verify) && isUnknownCA(verify):
		return "certificate signed by an unknown authority; pass --ca-file or set SSL_CERT_FILE", true
	case errors.As(err, &hostErr):
		return "TLS certificate does not match the host (" + hostErr.Error() + ")", true
	case errors.As(err, &invalid):
		return "invalid TLS certificate (" + invalid.Error() + ")", true
	case errors.As(err, &verify):
		return "TLS verification failed (" + verify.Err.Error() + ")", true
	case errors.As(err, &dns):
		return "DNS lookup of " + dns.Name + " failed (" + dns.Err + ")", true
	case errors.Is(err, forgehttp.ErrAttemptTimeout):
		return "request timed out", true
	case errors.As(err, &rh):
		return "TLS handshake failed; is the server speaking https? (check the scheme)", true
	case errors.As(err, &op):
		return strings.TrimSpace(op.Op + ": " + innermost(op.Err)), true
	case errors.As(err, &ne) && ne.Timeout():
		return "request timed out", true
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		// Connection-level failures http.Client wraps (EOF, reset).
		return innermost(ue.Err), true
	}
	return "", false
}

func isUnknownCA(v *tls.CertificateVerificationError) bool {
	var u x509.UnknownAuthorityError
	return errors.As(v.Err, &u)
}

func innermost(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}
