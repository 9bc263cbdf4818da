package fakegit

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Server is an emulator as a server, the part every forge's emulator
// shares: its state directory (a temporary one removed on Close), its CA
// and certificate, its listener, and the background work (a scripted
// reviewer, CI, webhook deliveries) it cancels and waits for on Close.
// An emulator embeds it and adds its forge.
type Server struct {
	name     string
	stateDir string
	tempDir  bool
	scheme   string
	host     string
	ca       *CA
	srv      *http.Server
	conns    atomic.Int64

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewServer prepares the server of the emulator name: stateDir (a
// temporary directory when empty) with its repos/ directory, and a CA
// whose certificate Start serves unless plainHTTP.
func NewServer(name, stateDir string, plainHTTP bool) (*Server, error) {
	s := &Server{name: name, stateDir: stateDir, scheme: "https"}
	if plainHTTP {
		s.scheme = "http"
	}
	if s.stateDir == "" {
		d, err := os.MkdirTemp("", name+"-")
		if err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		s.stateDir, s.tempDir = d, true
	}
	if err := os.MkdirAll(filepath.Join(s.stateDir, "repos"), 0o755); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	ca, err := NewCA(s.stateDir, name)
	if err != nil {
		return nil, err
	}
	s.ca = ca
	return s, nil
}

// Listen serves h on addr until Stop, or until ctx ends (so a test's
// server does not outlive it).
func (s *Server) Listen(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	s.host = ln.Addr().String()
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.conns.Add(1)
			}
		},
	}
	if s.scheme == "https" {
		s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{s.ca.Cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, s.srv.TLSConfig)
	}
	srv := s.srv
	s.Go(func(context.Context) {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(s.name+" serve", "err", err)
		}
	})
	s.Go(func(done context.Context) {
		select {
		case <-ctx.Done():
			s.shutdown()
		case <-done.Done():
		}
	})
	log.Info(s.name+" listening", "url", s.URL())
	return nil
}

// Go runs fn as the server's background work: its ctx ends when the
// server stops, and Stop waits for it to return. Before Listen, ctx is
// one that never ends.
func (s *Server) Go(fn func(ctx context.Context)) {
	ctx := s.Context()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn(ctx)
	}()
}

// Context ends when the server stops; before Listen it is one that
// never ends.
func (s *Server) Context() context.Context {
	if s.ctx == nil {
		return context.Background()
	}
	return s.ctx
}

// Listening reports whether Listen ran.
func (s *Server) Listening() bool { return s.ctx != nil }

func (s *Server) shutdown() {
	s.cancel()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(sctx)
}

// Stop stops serving, cancels the background work and waits for it.
func (s *Server) Stop() {
	if s.cancel != nil {
		s.shutdown()
	}
	s.wg.Wait()
}

// RemoveState removes the state directory when it is a temporary one.
func (s *Server) RemoveState() error {
	if s.tempDir {
		return os.RemoveAll(s.stateDir)
	}
	return nil
}

// Host is host:port of the running server.
func (s *Server) Host() string { return s.host }

// Scheme is https, or http when plain.
func (s *Server) Scheme() string { return s.scheme }

// URL is scheme://host.
func (s *Server) URL() string { return s.scheme + "://" + s.host }

// StateDir is where the bare repositories live.
func (s *Server) StateDir() string { return s.stateDir }

// CAFile is the PEM file of the CA that signed the server's certificate
// (GIT_SSL_CAINFO for git).
func (s *Server) CAFile() string { return s.ca.File }

// CAPEM is the CA certificate in PEM.
func (s *Server) CAPEM() []byte { return s.ca.PEM }

// CertPool trusts the server's CA.
func (s *Server) CertPool() *x509.CertPool { return s.ca.Pool }

// Connections is how many connections clients opened.
func (s *Server) Connections() int { return int(s.conns.Load()) }

// HTTPClient is a client that trusts the server's CA.
func (s *Server) HTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: s.ca.Pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// GitEnv is the environment git needs to talk to the server: no prompt,
// no system config, a test identity, and the CA when it serves TLS. The
// emulator adds its forge's way of carrying a token.
func (s *Server) GitEnv() []string {
	env := []string{
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	}
	if s.scheme == "https" {
		env = append(env, "GIT_SSL_CAINFO="+s.ca.File)
	}
	return env
}
