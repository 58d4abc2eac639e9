package sandbox

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// hostRule is one parsed AllowHosts entry.
type hostRule struct {
	host     string // lower-case name or canonical IP; for a wildcard, the suffix without "*."
	wildcard bool   // "*.example.com": every subdomain, not example.com itself
	ports    []string
}

// allowlist is the parsed AllowHosts of one run. The zero value allows
// nothing.
type allowlist []hostRule

// parseAllowHosts parses "host", "host:port", "[v6]:port" and "*.domain"
// entries. A bare host allows ports 80 and 443.
func parseAllowHosts(entries []string) (allowlist, []error) {
	var (
		out  allowlist
		errs []error
	)
	for i, e := range entries {
		r, err := parseHostRule(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("allowHosts[%d]: %w", i, err))
			continue
		}
		out = append(out, r)
	}
	return out, errs
}

func parseHostRule(entry string) (hostRule, error) {
	if entry == "" || strings.ContainsAny(entry, "/@ \t") {
		return hostRule{}, fmt.Errorf("%q must be host or host:port, without scheme or path", entry)
	}
	host, port := entry, ""
	switch {
	case strings.HasPrefix(entry, "[") && strings.HasSuffix(entry, "]"):
		// A bracketed IPv6 address without a port.
	case strings.HasPrefix(entry, "["), strings.Count(entry, ":") == 1:
		h, p, err := net.SplitHostPort(entry)
		if err != nil {
			return hostRule{}, fmt.Errorf("%q: %w", entry, err)
		}
		host, port = h, p
	}
	r := hostRule{ports: []string{"80", "443"}}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return hostRule{}, fmt.Errorf("%q: port must be 1-65535", entry)
		}
		r.ports = []string{strconv.Itoa(n)}
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.wildcard, host = true, rest
	}
	host = canonicalHost(host)
	if !validHost(host) {
		return hostRule{}, fmt.Errorf("%q: host must be a name or an IP address; only a leading \"*.\" is a wildcard", entry)
	}
	r.host = host
	return r, nil
}

// canonicalHost lower-cases a name, drops a trailing dot and prints an IP
// address in its canonical form, so that rules and requests compare equal.
func canonicalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return a.Unmap().String()
	}
	return h
}

// validHost reports whether h (canonical) is an IP address or a DNS name.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// allows reports whether host:port may be reached.
func (a allowlist) allows(host, port string) bool {
	host = canonicalHost(host)
	if n, err := strconv.Atoi(port); err == nil {
		port = strconv.Itoa(n)
	}
	for _, r := range a {
		match := host == r.host
		if r.wildcard {
			match = strings.HasSuffix(host, "."+r.host)
		}
		if match {
			for _, p := range r.ports {
				if p == port {
					return true
				}
			}
		}
	}
	return false
}
