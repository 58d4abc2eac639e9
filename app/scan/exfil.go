package scan

import (
	"net/url"
	"strings"
)

// link matches a markdown link [text](url) or, with image, an image
// ![alt](url) at i, and reports it when its URL could carry data out.
// Rendering an image fetches its URL with no click, so an image with a
// query string or a long opaque path segment is reported (high severity
// when a query value is long or templated); a link only when its query
// values are long or templated, or its URL is javascript:.
func (sc *injector) link(i int, image bool) int {
	s := sc.s
	if i < sc.linkUntil {
		return 0
	}
	t := i + 1
	if image {
		t = i + 2
	}
	k := t
	for k < len(s) && k-t < 1024 && s[k] != ']' {
		if s[k] == '[' {
			return 0
		}
		k++
	}
	if k+1 >= len(s) || s[k] != ']' || s[k+1] != '(' {
		return 0
	}
	u := k + 2
	for u < len(s) && (s[u] == ' ' || s[u] == '<') && u-k < 8 {
		u++
	}
	e := u
	for e < len(s) && e-u < 8192 && !isOneOf(s[e], " \t\n\r)>\"") {
		e++
	}
	sev := urlRisk(s[u:e], image)
	if sev == SeverityNone {
		sc.linkUntil = e
		return 0
	}
	end := e
	if p := strings.IndexByte(s[e:min(len(s), e+256)], ')'); p >= 0 {
		end = e + p + 1
	}
	kind := KindMarkdownLink
	if image {
		kind = KindMarkdownImage
	}
	return sc.add(kind, sev, i, end)
}

// urlRisk rates a markdown link or image URL.
func urlRisk(u string, image bool) Severity {
	if hasPrefixFold(u, 0, "javascript:") {
		return SeverityHigh
	}
	var rest string
	switch {
	case hasPrefixFold(u, 0, "https://"):
		rest = u[8:]
	case hasPrefixFold(u, 0, "http://"):
		rest = u[7:]
	case strings.HasPrefix(u, "//"):
		rest = u[2:]
	default:
		return SeverityNone
	}
	path, query := rest, ""
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		path, query = rest[:q], rest[q+1:]
	}
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query = query[:h]
	}
	templated := strings.ContainsAny(u, "{}$<>[]") || containsFold(u, "%7b") || containsFold(u, "%3c")
	longValue := false
	for _, p := range strings.Split(query, "&") {
		if _, v, ok := strings.Cut(p, "="); ok && len(v) >= 32 || !ok && len(p) >= 32 {
			longValue = true
		}
	}
	longSegment := false
	if h := strings.IndexByte(path, '/'); h >= 0 {
		for _, seg := range strings.Split(path[h+1:], "/") {
			if len(seg) >= 40 && !strings.Contains(seg, ".") {
				longSegment = true
			}
		}
	}
	switch {
	case image && (longValue || templated):
		return SeverityHigh
	case image && (query != "" || longSegment):
		return SeverityMedium
	case !image && (longValue || templated):
		return SeverityMedium
	}
	return SeverityNone
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if hasPrefixFold(s, i, sub) {
			return true
		}
	}
	return false
}

func isMIMEByte(c byte) bool { return isAlnum(c) || isOneOf(c, ".+-/;=_") }

// dataURI matches a data: URI at i (the word "data"): high severity for
// HTML and JavaScript, and for any payload that decodes to an injection;
// medium for SVG and other types; low for raster images.
func (sc *injector) dataURI(i int) int {
	s := sc.s
	m := i + 5
	c := runEnd(s, m, 128, isMIMEByte)
	if c >= len(s) || s[c] != ',' {
		return 0
	}
	mime := strings.ToLower(s[m:c])
	typ, params, _ := strings.Cut(mime, ";")
	if typ != "" && !strings.Contains(typ, "/") {
		return 0
	}
	p := c + 1
	e := p
	for e < len(s) && e-p < 1<<20 && !isOneOf(s[e], " \t\n\r\"')<>\\") {
		e++
	}
	var sev Severity
	switch {
	case typ == "text/html" || typ == "application/xhtml+xml" || strings.HasSuffix(typ, "javascript"):
		sev = SeverityHigh
	case typ == "image/svg+xml":
		sev = SeverityMedium
	case strings.HasPrefix(typ, "image/"):
		sev = SeverityLow
	default:
		sev = SeverityMedium
	}
	if sc.depth == 0 && sev < SeverityHigh {
		payload := s[p:min(e, p+maxEncoded)]
		var text string
		if strings.Contains(params, "base64") {
			if b := decodeBase64(payload); isText(b) {
				text = string(b)
			}
		} else if t, err := url.PathUnescape(payload); err == nil {
			text = t
		}
		if text != "" && sc.nested(text) >= SeverityMedium {
			sev = SeverityHigh
		}
	}
	return sc.add(KindDataURI, sev, i, e)
}
