package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-dev/warden/app/upstream"
)

const (
	// maxUpstreamBytes bounds the answer of an MCP server to one call.
	maxUpstreamBytes = 64 << 20
	// maxUpstreamConns bounds the gateway's connections to one MCP server
	// over plain HTTP: past it a call fails at once.
	maxUpstreamConns = 1024
	// drainWait and drainBytes bound how long and how much of an event
	// stream is read after the call's answer, in the background, so that
	// its connection can be reused (upstream.CloseSoon).
	drainWait  = time.Second
	drainBytes = 64 << 10
)

// errSessionGone is an MCP server's 404 to a request on a session it no
// longer knows (it restarted): the request was not handled.
var errSessionGone = errors.New("the MCP server no longer knows the session")

// callUpstream calls a tool on an MCP server's session and returns the
// result as a generic object. On a streamable-HTTP session with an id it
// posts tools/call on the session itself, one HTTP round trip on a reused
// connection, and reads the answer as JSON or as server-sent events; the
// SDK's client path (its connection's goroutines, several decodes of every
// message) cost as much as the governed call. Other sessions (the legacy
// HTTP+SSE transport, a server without sessions, the sessionless protocol
// revision) go through the SDK's client.
func (s *Service) callUpstream(ctx context.Context, cs *sdk.ClientSession, url, tool string, input map[string]any) (map[string]any, error) {
	sid := cs.ID()
	var version string
	if ir := cs.InitializeResult(); ir != nil {
		version = ir.ProtocolVersion
	}
	if sid == "" || version == "" || version >= newProtocol {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: input})
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(res)
		if err != nil {
			return nil, err
		}
		var out map[string]any
		return out, json.Unmarshal(raw, &out)
	}
	id := `"warden-` + strconv.FormatInt(s.rpcID.Add(1), 10) + `"`
	body, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  any             `json:"params"`
	}{"2.0", json.RawMessage(id), "tools/call", struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}{tool, input}})
	if err != nil {
		return nil, fmt.Errorf("encode tools/call: %w", err)
	}
	resp, err := s.post(ctx, url, sid, version, body)
	if err != nil {
		return nil, err
	}
	defer upstream.CloseSoon(resp.Body, drainWait, drainBytes)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, errSessionGone
	case resp.StatusCode != http.StatusOK:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	limited := io.LimitReader(resp.Body, maxUpstreamBytes)
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	switch strings.TrimSpace(strings.ToLower(ct)) {
	case "application/json":
		raw, err := io.ReadAll(limited)
		if err != nil {
			return nil, fmt.Errorf("read the answer: %w", err)
		}
		msg, err := decodeMessage(raw)
		if err != nil {
			return nil, err
		}
		if !msg.answers(id) {
			return nil, errors.New("the answer is not the response to the call")
		}
		return msg.output()
	case "text/event-stream":
		return s.readEvents(ctx, limited, url, sid, version, id)
	default:
		return nil, fmt.Errorf("answer of unexpected content type %q", ct)
	}
}

// post sends one JSON-RPC message on a session: over the gateway's own
// connections to a plain-HTTP server, through net/http to the others.
func (s *Service) post(ctx context.Context, url, sid, version string, body []byte) (*http.Response, error) {
	if s.ups != nil {
		if p, uri, ok := s.ups.For(url); ok {
			return p.Post(ctx, uri, body, []upstream.Header{{Name: "Accept", Value: "application/json, text/event-stream"},
				{Name: headerSessionID, Value: sid}, {Name: headerProtocolVersion, Value: version}})
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(headerSessionID, sid)
	req.Header.Set(headerProtocolVersion, version)
	return s.http.Do(req)
}

// readEvents reads server-sent events until the response to the call id:
// notifications are skipped, and the server's own requests get the answer
// the SDK's client gives without handlers (an empty result to ping and
// roots/list, method not found to the rest).
func (s *Service) readEvents(ctx context.Context, r io.Reader, url, sid, version, id string) (map[string]any, error) {
	br := bufio.NewReader(r)
	var data []byte
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && (err != io.EOF || len(line) == 0) {
			if err == io.EOF {
				return nil, errors.New("the server ended the event stream before the response")
			}
			return nil, fmt.Errorf("read the event stream: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
			}
			continue
		}
		// A blank line ends an event.
		if len(data) == 0 {
			continue
		}
		msg, err := decodeMessage(data)
		data = data[:0]
		if err != nil {
			return nil, err
		}
		switch {
		case msg.answers(id):
			return msg.output()
		case msg.Method != "" && len(msg.ID) > 0:
			s.answerServer(ctx, url, sid, version, msg)
		}
	}
}

// answerServer answers a request the server sent during a call.
func (s *Service) answerServer(ctx context.Context, url, sid, version string, req *rpcMessage) {
	resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	switch req.Method {
	case "ping":
		resp["result"] = map[string]any{}
	case "roots/list":
		resp["result"] = map[string]any{"roots": []any{}}
	default:
		resp["error"] = &RPCError{Code: rpcMethodNotFound, Message: "method " + req.Method + " is not supported by the gateway's client"}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return
	}
	res, err := s.post(ctx, url, sid, version, b)
	if err != nil {
		s.log.WarnContext(ctx, "answer an MCP server's request", "method", req.Method, "err", err)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
	_ = res.Body.Close()
}

// rpcMessage is a JSON-RPC message from an MCP server.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result map[string]any  `json:"result"`
	Error  *RPCError       `json:"error"`
}

func decodeMessage(b []byte) (*rpcMessage, error) {
	var m rpcMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode the server's message: %w", err)
	}
	return &m, nil
}

// answers reports whether m is the response to the call id.
func (m *rpcMessage) answers(id string) bool {
	return m.Method == "" && bytes.Equal(bytes.TrimSpace(m.ID), []byte(id))
}

// output is the CallToolResult of a response, checked as the SDK's client
// checks it: an error response is an error, and every content item has a
// known type.
func (m *rpcMessage) output() (map[string]any, error) {
	if m.Error != nil {
		return nil, m.Error
	}
	if m.Result == nil {
		return nil, errors.New("the response has no result")
	}
	content, ok := m.Result["content"].([]any)
	if !ok && m.Result["content"] != nil {
		return nil, errors.New("the result's content is not a list")
	}
	for _, c := range content {
		item, _ := c.(map[string]any)
		switch item["type"] {
		case "text", "image", "audio", "resource", "resource_link":
		default:
			return nil, fmt.Errorf("the result has content of unknown type %v", item["type"])
		}
	}
	if !ok {
		m.Result["content"] = []any{}
	}
	return m.Result, nil
}
