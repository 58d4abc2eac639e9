// Package static serves the console's own stylesheet and the vendored htmx
// from the binary. URLs carry a content hash so browsers may cache them for
// a year and still pick up a new build at once.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"mime"
	"path"

	"github.com/gofiber/fiber/v2"
)

// Prefix is where the assets are mounted.
const Prefix = "/static/"

//go:embed style.css htmx.min.js inbox.js
var files embed.FS

type asset struct {
	body        []byte
	hash        string
	contentType string
}

// Assets is the set of embedded files with their content hashes.
type Assets struct {
	byName map[string]asset
}

// New reads the embedded files and hashes them.
func New() *Assets {
	a := &Assets{byName: map[string]asset{}}
	entries, _ := files.ReadDir(".") // embedded at build time; cannot fail
	for _, e := range entries {
		b, _ := files.ReadFile(e.Name())
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(e.Name()))
		switch path.Ext(e.Name()) {
		case ".css":
			ct = "text/css; charset=utf-8"
		case ".js":
			ct = "text/javascript; charset=utf-8"
		}
		a.byName[e.Name()] = asset{body: b, hash: hex.EncodeToString(sum[:])[:12], contentType: ct}
	}
	return a
}

// URL returns the cache-busting URL of an embedded file, or "" when there
// is no such file.
func (a *Assets) URL(name string) string {
	f, ok := a.byName[name]
	if !ok {
		return ""
	}
	return Prefix + name + "?v=" + f.hash
}

// Handler serves GET /static/*. A request naming the current hash is
// cacheable for a year; any other is revalidated.
func (a *Assets) Handler(c *fiber.Ctx) error {
	f, ok := a.byName[c.Params("*")]
	if !ok {
		return fiber.ErrNotFound
	}
	etag := `"` + f.hash + `"`
	c.Set(fiber.HeaderETag, etag)
	if c.Query("v") == f.hash {
		c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	} else {
		c.Set(fiber.HeaderCacheControl, "no-cache")
	}
	if c.Get(fiber.HeaderIfNoneMatch) == etag {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, f.contentType)
	return c.Send(f.body)
}
