package rag

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
)

// Embedder calls an OpenAI-compatible POST /v1/embeddings (the model
// router's) for the vectors of chunks and queries.
type Embedder struct {
	// URL is the base URL, e.g. http://127.0.0.1:8083; "/v1/embeddings"
	// is appended.
	URL string
	// Token, when set, is sent as a bearer token.
	Token string
	// HTTP defaults to a client with a 30-second timeout.
	HTTP *http.Client
	// Batch is how many inputs one request carries (default 64).
	Batch int
}

// embeddingRequest and embeddingResponse are the OpenAI wire format.
type embeddingRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type embeddingResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// maxEmbeddingResponse bounds an embeddings answer (64 inputs of 4096
// dimensions as JSON fit well within it).
const maxEmbeddingResponse = 64 << 20

// Embed returns the vectors of inputs under model, in order.
func (e *Embedder) Embed(ctx context.Context, model string, inputs []string) ([][]float32, error) {
	client := e.HTTP
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	batch := e.Batch
	if batch <= 0 {
		batch = 64
	}
	out := make([][]float32, 0, len(inputs))
	for start := 0; start < len(inputs); start += batch {
		end := min(start+batch, len(inputs))
		vs, err := e.embedBatch(ctx, client, model, inputs[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

func (e *Embedder) embedBatch(ctx context.Context, client *http.Client, model string, inputs []string) ([][]float32, error) {
	body, err := json.Marshal(embeddingRequest{Model: model, Input: inputs})
	if err != nil {
		return nil, fmt.Errorf("rag: encode embeddings request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(e.URL, "/")+"/v1/embeddings", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("rag: embeddings request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.Token != "" {
		req.Header.Set("Authorization", "Bearer "+e.Token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("rag: embeddings: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxEmbeddingResponse))
	if err != nil {
		return nil, fmt.Errorf("rag: embeddings: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("rag: embeddings: HTTP %d", resp.StatusCode)
	}
	var er embeddingResponse
	if err := json.Unmarshal(raw, &er); err != nil {
		return nil, fmt.Errorf("rag: embeddings answer: %w", err)
	}
	out := make([][]float32, len(inputs))
	for _, d := range er.Data {
		if d.Index < 0 || d.Index >= len(inputs) || len(d.Embedding) == 0 {
			return nil, fmt.Errorf("rag: embeddings answer: bad item index %d", d.Index)
		}
		out[d.Index] = d.Embedding
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("rag: embeddings answer: no vector for input %d", i)
		}
	}
	return out, nil
}

// Cosine returns the cosine similarity of a and b; 0 when their lengths
// differ or either is zero.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}
