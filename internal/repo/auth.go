package repo

import "github.com/convergeloop/converge/internal/secure"

// GitAuthEnv is AuthEnvFor for a remote the caller means to give the
// token to. It refuses (SEC-6) a remote git would reach in clear (not
// https, and not plain http to a loopback address such as a local
// emulator) so the user hears why, rather than meeting a failed fetch.
func GitAuthEnv(remoteURL, token string, caFiles ...string) ([]string, error) {
	if token != "" {
		if err := secure.CheckTokenURLString(remoteURL); err != nil {
			return nil, err
		}
	}
	return AuthEnvFor(remoteURL, token, caFiles...), nil
}
