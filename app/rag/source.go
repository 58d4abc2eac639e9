package rag

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/warden-dev/warden/app/resource"
)

// Document is one document a knowledge source yields.
type Document struct {
	// ID identifies the document within its source.
	ID       string
	URI      string
	Title    string
	Text     string
	Metadata map[string]string
}

// Fetch limits and defaults of the connectors.
const (
	DefaultMaxDocumentBytes = 1 << 20
	DefaultMaxDocuments     = 1000
	DefaultFetchTimeout     = 30 * time.Second
	// maxErrors bounds the errors a sync records in the source's status.
	maxErrors = 20
)

// Fetcher reads the documents of knowledge sources.
type Fetcher struct {
	// FileRoot is the directory sources of type file are read under;
	// empty refuses them.
	FileRoot string
	// HTTP fetches sources of type url.
	HTTP *http.Client
	// MaxDocumentBytes, MaxDocuments and Timeout bound one sync.
	MaxDocumentBytes int64
	MaxDocuments     int
	Timeout          time.Duration
}

// Fetched is what one sync of a source read: the documents and the
// problems with the ones it skipped. Err is set when the source could not
// be read at all; its stored documents are then kept.
type Fetched struct {
	Documents []Document
	Errors    []string
	Err       error
}

func (f *Fetched) skip(format string, args ...any) {
	if len(f.Errors) < maxErrors {
		f.Errors = append(f.Errors, fmt.Sprintf(format, args...))
	}
}

// NewHTTPClient returns the client of URL sources: it never connects to a
// link-local address (cloud metadata services live there), nor, with
// denyPrivate, to loopback or private addresses; it follows at most 5
// redirects, each checked the same way.
func NewHTTPClient(denyPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		ip := net.ParseIP(host)
		if ip == nil {
			return fmt.Errorf("rag: refusing to connect to %s: not an IP address", address)
		}
		if ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast() {
			return fmt.Errorf("rag: refusing to connect to %s: link-local, multicast or unspecified address", address)
		}
		if denyPrivate && (ip.IsLoopback() || ip.IsPrivate()) {
			return fmt.Errorf("rag: refusing to connect to %s: loopback or private address", address)
		}
		return nil
	}}
	tr := &http.Transport{
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 20 * time.Second,
		MaxIdleConns:          10,
		IdleConnTimeout:       30 * time.Second,
	}
	return &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("rag: more than 5 redirects")
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return fmt.Errorf("rag: redirect to scheme %q", req.URL.Scheme)
		}
		return nil
	}}
}

func (f *Fetcher) withDefaults() *Fetcher {
	g := *f
	if g.HTTP == nil {
		g.HTTP = NewHTTPClient(false)
	}
	if g.MaxDocumentBytes <= 0 {
		g.MaxDocumentBytes = DefaultMaxDocumentBytes
	}
	if g.MaxDocuments <= 0 {
		g.MaxDocuments = DefaultMaxDocuments
	}
	if g.Timeout <= 0 {
		g.Timeout = DefaultFetchTimeout
	}
	return &g
}

// Fetch reads the documents of a source. The source's metadata is merged
// under each document's own.
func (f *Fetcher) Fetch(ctx context.Context, spec resource.KnowledgeSourceSpec) Fetched {
	g := f.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	var out Fetched
	switch spec.Type {
	case "inline":
		g.inline(spec, &out)
	case "file":
		g.files(spec, &out)
	case "url":
		g.url(ctx, spec, &out)
	case "git", "s3":
		out.Err = fmt.Errorf("%w: knowledge sources of type %s are not supported by this RAG service (use file, url or inline)", ErrFetch, spec.Type)
	default:
		out.Err = fmt.Errorf("%w: unknown knowledge source type %q", ErrFetch, spec.Type)
	}
	for i := range out.Documents {
		out.Documents[i].Metadata = mergeMetadata(spec.Metadata, out.Documents[i].Metadata)
	}
	return out
}

func mergeMetadata(base, own map[string]string) map[string]string {
	if len(base) == 0 && len(own) == 0 {
		return nil
	}
	m := make(map[string]string, len(base)+len(own))
	for k, v := range base {
		m[k] = v
	}
	for k, v := range own {
		m[k] = v
	}
	return m
}

func (g *Fetcher) inline(spec resource.KnowledgeSourceSpec, out *Fetched) {
	seen := map[string]bool{}
	add := func(d Document) {
		switch {
		case seen[d.ID]:
			out.skip("document %q: duplicate id", d.ID)
		case int64(len(d.Text)) > g.MaxDocumentBytes:
			out.skip("document %q: %d bytes, more than the limit of %d", d.ID, len(d.Text), g.MaxDocumentBytes)
		case len(out.Documents) >= g.MaxDocuments:
			out.skip("document %q: more than %d documents", d.ID, g.MaxDocuments)
		default:
			seen[d.ID] = true
			out.Documents = append(out.Documents, d)
		}
	}
	if spec.Content != "" {
		add(Document{ID: "content", URI: "inline:content", Text: spec.Content})
	}
	for _, d := range spec.Documents {
		add(Document{ID: d.ID, URI: "inline:" + d.ID, Title: d.Title, Text: d.Content, Metadata: d.Metadata})
	}
}

// files reads a file, or the regular files of a directory tree, under
// FileRoot. os.Root keeps every open inside the root: "..", absolute
// paths and symbolic links that lead out are refused.
func (g *Fetcher) files(spec resource.KnowledgeSourceSpec, out *Fetched) {
	if g.FileRoot == "" {
		out.Err = fmt.Errorf("%w: knowledge sources of type file are disabled: the RAG service has no file root (warden up --rag-file-root)", ErrFetch)
		return
	}
	p := path.Clean(strings.TrimPrefix(spec.Path, "/"))
	if p == ".." || strings.HasPrefix(p, "../") || !fs.ValidPath(p) {
		out.Err = fmt.Errorf("%w: path %q leaves the file root", ErrFetch, spec.Path)
		return
	}
	root, err := os.OpenRoot(g.FileRoot)
	if err != nil {
		out.Err = fmt.Errorf("%w: open the file root: %v", ErrFetch, err)
		return
	}
	defer root.Close()
	fsys := root.FS()
	info, err := fs.Stat(fsys, p)
	if err != nil {
		out.Err = fmt.Errorf("%w: %s: %v", ErrFetch, spec.Path, cleanPathError(err))
		return
	}
	var files []string
	if info.IsDir() {
		err = fs.WalkDir(fsys, p, func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				out.skip("%s: %v", name, cleanPathError(err))
				return nil
			}
			if name != p && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				if len(files) >= g.MaxDocuments {
					out.skip("%s: more than %d documents", name, g.MaxDocuments)
					return fs.SkipAll
				}
				files = append(files, name)
			}
			return nil
		})
		if err != nil {
			out.Err = fmt.Errorf("%w: walk %s: %v", ErrFetch, spec.Path, cleanPathError(err))
			return
		}
	} else {
		files = []string{p}
	}
	sort.Strings(files)
	for _, name := range files {
		text, err := g.readFile(fsys, name)
		if err != nil {
			out.skip("%s: %v", name, err)
			continue
		}
		id := name
		if info.IsDir() {
			id = strings.TrimPrefix(strings.TrimPrefix(name, p), "/")
		} else {
			id = path.Base(name)
		}
		out.Documents = append(out.Documents, Document{ID: id, URI: "file:" + name, Title: path.Base(name), Text: text})
	}
}

func (g *Fetcher) readFile(fsys fs.FS, name string) (string, error) {
	fh, err := fsys.Open(name)
	if err != nil {
		return "", cleanPathError(err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, g.MaxDocumentBytes+1))
	if err != nil {
		return "", cleanPathError(err)
	}
	if int64(len(b)) > g.MaxDocumentBytes {
		return "", fmt.Errorf("larger than the limit of %d bytes", g.MaxDocumentBytes)
	}
	if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
		return "", errors.New("not UTF-8 text")
	}
	return string(b), nil
}

// cleanPathError drops the operation and absolute path from a file
// error: statuses and answers name paths relative to the root only.
func cleanPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (g *Fetcher) url(ctx context.Context, spec resource.KnowledgeSourceSpec, out *Fetched) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, spec.URL, nil)
	if err != nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		out.Err = fmt.Errorf("%w: url %q is not an http(s) URL", ErrFetch, spec.URL)
		return
	}
	req.Header.Set("Accept", "text/plain, text/markdown, text/html;q=0.9, */*;q=0.1")
	req.Header.Set("User-Agent", "warden-rag")
	resp, err := g.HTTP.Do(req)
	if err != nil {
		out.Err = fmt.Errorf("%w: GET %s: %v", ErrFetch, spec.URL, unwrapURLError(err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		out.Err = fmt.Errorf("%w: GET %s: HTTP %d", ErrFetch, spec.URL, resp.StatusCode)
		return
	}
	if resp.ContentLength > g.MaxDocumentBytes {
		out.Err = fmt.Errorf("%w: GET %s: %d bytes, more than the limit of %d", ErrFetch, spec.URL, resp.ContentLength, g.MaxDocumentBytes)
		return
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, g.MaxDocumentBytes+1))
	if err != nil {
		out.Err = fmt.Errorf("%w: GET %s: %v", ErrFetch, spec.URL, unwrapURLError(err))
		return
	}
	if int64(len(b)) > g.MaxDocumentBytes {
		out.Err = fmt.Errorf("%w: GET %s: more than the limit of %d bytes", ErrFetch, spec.URL, g.MaxDocumentBytes)
		return
	}
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		out.Err = fmt.Errorf("%w: GET %s: the body is not UTF-8 text", ErrFetch, spec.URL)
		return
	}
	text, title := string(b), ""
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/html" || mt == "application/xhtml+xml" {
		text, title = HTMLText(text)
	}
	out.Documents = append(out.Documents, Document{ID: spec.URL, URI: spec.URL, Title: title, Text: text})
}

func unwrapURLError(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

var (
	reHidden = regexp.MustCompile(`(?is)<(script|style|noscript|template)\b.*?</(script|style|noscript|template)\s*>`)
	reTitle  = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title\s*>`)
	reBlock  = regexp.MustCompile(`(?i)<(br|/p|/div|/li|/h[1-6]|/tr|/section|/article)\b[^>]*>`)
	reTag    = regexp.MustCompile(`(?s)<[^>]*>`)
	reSpaces = regexp.MustCompile(`[ \t\r\f\v]+`)
	reLines  = regexp.MustCompile(`\n\s*\n+`)
)

// HTMLText returns the visible text and the title of an HTML page: scripts,
// styles and tags removed, entities decoded, blank lines collapsed. Text
// hidden from readers by CSS stays: the injection scan sees it.
func HTMLText(page string) (text, title string) {
	if m := reTitle.FindStringSubmatch(page); m != nil {
		title = strings.TrimSpace(html.UnescapeString(reTag.ReplaceAllString(m[1], "")))
	}
	s := reHidden.ReplaceAllString(page, " ")
	s = reTitle.ReplaceAllString(s, " ")
	s = reBlock.ReplaceAllString(s, "\n")
	s = reTag.ReplaceAllString(s, " ")
	s = html.UnescapeString(s)
	s = reSpaces.ReplaceAllString(s, " ")
	s = reLines.ReplaceAllString(s, "\n\n")
	return strings.TrimSpace(s), title
}
