package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/resource"
)

// CallTool calls a tool of an MCP server: step 7 of a governed call. The
// server is refused when it is quarantined (the gateway's step 1 checks
// too, from its snapshot; this check reads the newest state). The result
// is returned as a generic object in the shape of CallToolResult, with the
// data of images and audio replaced by their size and hash so that the
// record never holds them; the caller's context may carry a blob store
// (withBlobs) that keeps the data to hand it to the client.
func (s *Service) CallTool(ctx context.Context, tenant, ns, server, tool string, input map[string]any) (any, error) {
	cached, err := s.cachedServer(ctx, tenant, ns, server)
	if err != nil {
		return nil, err
	}
	if cached == nil {
		return nil, apierr.New(apierr.CodeNotFound, "MCP server %q not found in namespace %q", server, ns)
	}
	if reason := quarantineReason(cached.obj); reason != "" {
		return nil, apierr.New(apierr.CodeQuarantined, "MCP server %q is quarantined: %s", server, reason)
	}
	if cached.err != nil {
		return nil, apierr.New(apierr.CodeUnavailable, "MCP server %q: %s", server, cached.err)
	}
	spec := cached.spec
	var out map[string]any
	for attempt := 0; ; attempt++ {
		cs, key, err := s.session(ctx, tenant, ns, server, spec)
		if err != nil {
			return nil, apierr.New(apierr.CodeUnavailable, "MCP server %q cannot be reached: %s", server, err)
		}
		out, err = s.callUpstream(ctx, cs, spec.URL, tool, input)
		if err == nil {
			break
		}
		if (errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, errSessionGone)) && attempt == 0 {
			// The session ended (the server restarted): the request was
			// not delivered, so it is safe to dial once more.
			s.dropSession(key, cs)
			continue
		}
		if ctx.Err() != nil {
			return nil, apierr.New(apierr.CodeTimeout, "MCP tool %s/%s did not answer in time", server, tool)
		}
		return nil, apierr.New(apierr.CodeToolFailed, "MCP tool %s/%s failed: %s", server, tool, err)
	}
	digestOutput(out, blobsFrom(ctx))
	if isError, _ := out["isError"].(bool); isError {
		return out, apierr.New(apierr.CodeToolFailed, "MCP tool %s/%s answered with an error result", server, tool)
	}
	return out, nil
}

// quarantineReason says why a server is quarantined, or "".
func quarantineReason(obj *resource.Object) string {
	if q, _ := obj.Spec["quarantined"].(bool); q {
		return "spec.quarantined is true"
	}
	if q, ok := obj.Status["quarantine"].(map[string]any); ok {
		r, _ := q["reason"].(string)
		if r == "" {
			r = "quarantined"
		}
		return r
	}
	return ""
}

// digestOutput makes a CallToolResult the recorded output. Text,
// embedded text resources and resource links stay as they are (step 9
// scans every string); the base64 data of images, audio and binary
// resources becomes {bytes, sha256}.
func digestOutput(out map[string]any, b *blobs) {
	content, _ := out["content"].([]any)
	for _, c := range content {
		item, ok := c.(map[string]any)
		if !ok {
			continue
		}
		switch item["type"] {
		case "image", "audio":
			digestData(item, "data", b)
		case "resource":
			if r, ok := item["resource"].(map[string]any); ok {
				digestData(r, "blob", b)
			}
		}
	}
}

// digestData replaces m[field] (base64) by its decoded size and SHA-256.
func digestData(m map[string]any, field string, b *blobs) {
	s, ok := m[field].(string)
	if !ok {
		return
	}
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		data = []byte(s)
	}
	sum := sha256.Sum256(data)
	h := "sha256:" + hex.EncodeToString(sum[:])
	delete(m, field)
	m["bytes"], m["sha256"] = len(data), h
	b.put(h, s)
}

// blobs keeps the data of images, audio and binary resources of the calls
// of one request, by hash, so that the client receives them although the
// record does not hold them.
type blobs struct {
	mu sync.Mutex
	m  map[string]string
}

type blobsKey struct{}

func withBlobs(ctx context.Context) (context.Context, *blobs) {
	b := &blobs{m: map[string]string{}}
	return context.WithValue(ctx, blobsKey{}, b), b
}

func blobsFrom(ctx context.Context) *blobs {
	b, _ := ctx.Value(blobsKey{}).(*blobs)
	return b
}

// empty reports whether b holds no data to put back.
func (b *blobs) empty() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m) == 0
}

func (b *blobs) put(hash, data string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.m[hash] = data
	b.mu.Unlock()
}

// restore puts the data back into a result the gateway answered; data it
// no longer has (a replayed call) stays as {bytes, sha256}.
func (b *blobs) restore(out map[string]any) {
	if b == nil {
		return
	}
	content, _ := out["content"].([]any)
	for _, c := range content {
		item, ok := c.(map[string]any)
		if !ok {
			continue
		}
		target, field := item, "data"
		if item["type"] == "resource" {
			target, _ = item["resource"].(map[string]any)
			field = "blob"
		}
		if target == nil {
			continue
		}
		h, _ := target["sha256"].(string)
		b.mu.Lock()
		data, ok := b.m[h]
		b.mu.Unlock()
		if ok {
			target[field] = data
			delete(target, "sha256")
			delete(target, "bytes")
		}
	}
}
