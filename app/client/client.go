package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
)

// Media types of request bodies.
const (
	ContentTypeYAML       = "application/yaml"
	ContentTypeJSON       = "application/json"
	ContentTypeMergePatch = "application/merge-patch+json"
)

// Client talks to one control plane with one credential. It is safe for
// concurrent use.
type Client struct {
	base      *url.URL
	baseErr   error
	token     string
	http      *http.Client
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient replaces the HTTP client (by default a client without a
// global timeout, because watches stream for as long as the caller wants;
// bound calls with their context instead).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

// New returns a client for the control plane at server (e.g.
// "http://127.0.0.1:8080") that authenticates with token ("" sends no
// Authorization header). An invalid server URL is reported by the first
// call, so that New can be used in expressions.
func New(server, token string, opts ...Option) *Client {
	c := &Client{token: token, http: &http.Client{}, userAgent: "warden-client"}
	c.base, c.baseErr = parseServer(server)
	for _, o := range opts {
		o(c)
	}
	return c
}

func parseServer(server string) (*url.URL, error) {
	server = strings.TrimSpace(server)
	if server == "" {
		return nil, errors.New("server address is empty")
	}
	if !strings.Contains(server, "://") {
		server = defaultScheme(server) + "://" + server
	}
	u, err := url.Parse(strings.TrimRight(server, "/"))
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("server address %q is not a URL such as https://warden.example.com or http://127.0.0.1:8080", server)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("server address %q: scheme must be http or https", server)
	}
	return u, nil
}

// defaultScheme is the scheme assumed for a server address given without
// one: http for a loopback host (warden up serves plaintext there), https
// for any other, since Warden refuses plaintext off loopback.
func defaultScheme(hostport string) string {
	host, _, _ := strings.Cut(hostport, "/")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return "http"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return "http"
	}
	return "https"
}

// Server returns the server address the client was built with.
func (c *Client) Server() string {
	if c.base == nil {
		return ""
	}
	return c.base.String()
}

// do sends one request and returns the response when its status is 2xx.
// Any other status is decoded into an *APIError and the body is closed.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, contentType string, body []byte) (*http.Response, error) {
	if c.baseErr != nil {
		return nil, c.baseErr
	}
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("build %s %s: %w", method, path, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", ContentTypeJSON)
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		}
		if isUnreachable(err) {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // drop the repeated method and URL
			}
			return nil, fmt.Errorf("%w at %s: %w", ErrUnreachable, c.Server(), err)
		}
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, decodeError(resp)
}

// doJSON sends a request and decodes a 2xx JSON answer into out (when out
// is not nil).
func (c *Client) doJSON(ctx context.Context, method, path string, query url.Values, contentType string, body []byte, out any) error {
	resp, err := c.do(ctx, method, path, query, contentType, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode %s %s response: %w", method, path, err)
	}
	return nil
}

// isUnreachable reports whether err means no HTTP exchange took place
// because the server could not be reached at all.
func isUnreachable(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}
