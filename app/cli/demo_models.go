package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/listener"
)

// defaultDemoModelsListen is where `warden demo models` listens; the
// Models of examples/router point there.
const defaultDemoModelsListen = "127.0.0.1:9091"

func newDemoModelsCmd(a *app) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "models",
		Short: "Serve a local OpenAI-compatible model provider, with an outage, for the model router tour",
		Long: `models serves a tiny OpenAI-compatible chat completions API, so that the Models of
examples/router/ have something real to call through the model router:

  POST /v1/chat/completions          answers (streamed too) with a short echo of the prompt
  POST /outage/v1/chat/completions   always 503, as an overloaded provider answers

The agent of examples/router/ routes to the outage first, so every call shows the router
switching to the fallback (ProviderSwitched) and "warden route explain" says why. Every call
is printed. Stop with Ctrl-C.`,
		Example: `  warden demo models`,
		Args:    wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, _, err := net.SplitHostPort(listen); err != nil {
				return usagef("--listen %q: want host:port, e.g. %s", listen, defaultDemoModelsListen)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", listen, err)
			}
			d := &demoModels{out: a.env.Stdout}
			srv := &http.Server{Handler: listener.RecoverHTTP(d.handler(), slog.New(slog.NewTextHandler(a.env.Stderr, nil))), ReadHeaderTimeout: 10 * time.Second}
			d.printf("Demo model provider listening on http://%s (Ctrl-C to stop):\n", ln.Addr())
			d.printf("  POST /v1/chat/completions          answers\n  POST /outage/v1/chat/completions   503 overloaded\n")
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			select {
			case err := <-errc:
				return fmt.Errorf("demo models: %w", err)
			case <-cmd.Context().Done():
			}
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(shutdown); err != nil {
				return fmt.Errorf("stop demo models: %w", err)
			}
			if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("demo models: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", defaultDemoModelsListen, "address to listen on (the Models in examples/router/ use "+defaultDemoModelsListen+")")
	return cmd
}

// demoModels is the demo provider.
type demoModels struct {
	mu  sync.Mutex
	out io.Writer
	n   int
}

func (d *demoModels) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, format, args...)
}

func (d *demoModels) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /outage/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		d.printf("outage   503 overloaded\n")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error","param":null,"code":null}}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", d.chat)
	return mux
}

func (d *demoModels) chat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || len(req.Messages) == 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"send {\"messages\": [...]}","type":"invalid_request_error","param":"messages","code":null}}`)
		return
	}
	var prompt string
	if json.Unmarshal(req.Messages[len(req.Messages)-1].Content, &prompt) != nil {
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(req.Messages[len(req.Messages)-1].Content, &parts)
		for _, p := range parts {
			prompt += p.Text
		}
	}
	answer := "You said: " + prompt
	d.mu.Lock()
	d.n++
	n := d.n
	d.mu.Unlock()
	d.printf("answer   #%d model %s stream %v\n", n, req.Model, req.Stream)
	id := fmt.Sprintf("chatcmpl-demo-%d", n)
	words := strings.Fields(answer)
	usage := map[string]any{"prompt_tokens": len(strings.Fields(prompt)) + 3, "completion_tokens": len(words),
		"total_tokens": len(strings.Fields(prompt)) + 3 + len(words)}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": answer}, "finish_reason": "stop", "logprobs": nil}},
			"usage":   usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for i, word := range words {
		if i > 0 {
			word = " " + word
		}
		send(chunk(map[string]any{"content": word}, nil))
	}
	send(chunk(map[string]any{}, "stop"))
	send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": req.Model, "choices": []any{}, "usage": usage})
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}
