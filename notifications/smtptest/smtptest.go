// Package smtptest runs a real SMTP submission server in process (go-smtp)
// with STARTTLS and AUTH PLAIN, for tests and benchmarks of e-mail
// delivery. It is not used in production.
package smtptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one accepted message.
type Message struct {
	From string
	To   []string
	Data []byte
	// User is the AUTH user that submitted it.
	User string
	// TLS reports whether the session ran over TLS.
	TLS bool
	At  time.Time
}

// Server is a running SMTP server.
type Server struct {
	Host     string
	Port     int
	Username string
	Password string
	// Roots trusts the server's certificate.
	Roots *x509.CertPool

	srv *smtp.Server

	mu       sync.Mutex
	messages []Message
	failNext int
	notify   chan struct{}
}

// Start starts a server on 127.0.0.1 that requires TLS (STARTTLS) before
// AUTH, and AUTH before MAIL; it stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	cert, roots, err := selfSigned()
	if err != nil {
		t.Fatalf("smtptest: certificate: %v", err)
	}
	s := &Server{Host: "127.0.0.1", Username: "warden", Password: "s3cret-pass", Roots: roots, notify: make(chan struct{}, 1)}
	s.srv = smtp.NewServer(&backend{s: s})
	s.srv.Domain = "localhost"
	s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	s.srv.ReadTimeout = 10 * time.Second
	s.srv.WriteTimeout = 10 * time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("smtptest: listen: %v", err)
	}
	s.Port = ln.Addr().(*net.TCPAddr).Port
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// FailNext makes the next n messages fail with a temporary error (451).
func (s *Server) FailNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = n
}

// Messages returns the accepted messages so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Wait returns once at least n messages were accepted, or fails the test
// after timeout.
func (s *Server) Wait(t testing.TB, n int, timeout time.Duration) []Message {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if m := s.Messages(); len(m) >= n {
			return m
		}
		select {
		case <-s.notify:
		case <-deadline.C:
			t.Fatalf("smtptest: %d of %d messages after %s", len(s.Messages()), n, timeout)
		}
	}
}

type backend struct{ s *Server }

func (b *backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: b.s, conn: c}, nil
}

type session struct {
	s    *Server
	conn *smtp.Conn
	user string
	from string
	to   []string
}

func (se *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (se *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != se.s.Username || password != se.s.Password {
			return errors.New("invalid credentials")
		}
		se.user = username
		return nil
	}), nil
}

func (se *session) Mail(from string, _ *smtp.MailOptions) error {
	if _, ok := se.conn.TLSConnectionState(); !ok {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Must issue a STARTTLS command first"}
	}
	if se.user == "" {
		return smtp.ErrAuthRequired
	}
	se.from = from
	return nil
}

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	se.to = append(se.to, to)
	return nil
}

func (se *session) Data(r io.Reader) error {
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, r); err != nil {
		return err
	}
	se.s.mu.Lock()
	defer se.s.mu.Unlock()
	if se.s.failNext > 0 {
		se.s.failNext--
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	}
	_, isTLS := se.conn.TLSConnectionState()
	se.s.messages = append(se.s.messages, Message{From: se.from, To: append([]string(nil), se.to...), Data: buf.Bytes(),
		User: se.user, TLS: isTLS, At: time.Now()})
	select {
	case se.s.notify <- struct{}{}:
	default:
	}
	return nil
}

func (se *session) Reset()        { se.from, se.to = "", nil }
func (se *session) Logout() error { return nil }

// selfSigned makes a certificate for 127.0.0.1 and localhost.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smtptest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: c}, roots, nil
}
