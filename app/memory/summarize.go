package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/store"
)

// Bounds of a summary pass.
const (
	// MaxSummarizeItems is the most items one pass compacts (the oldest).
	MaxSummarizeItems = 200
	// DefaultKeepRecent is how many newest items a pass leaves alone when
	// neither the Memory nor the request says.
	DefaultKeepRecent = 20
	// extractiveSentences and extractiveBytes bound an extractive summary.
	extractiveSentences = 8
	extractiveBytes     = 2000
	// maxModelAnswer bounds the router's answer read.
	maxModelAnswer = 1 << 20
)

// Summary methods, as the summary item's metadata names them.
const (
	MethodExtractive = "extractive"
	MethodModel      = "model"
)

// stopwords are left out of the extractive summary's term weights.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the and for are but not you all any can had her was one our out has him his how its
		may new now old see two way who did get let put say she too use that with have this will your from they know want
		been good much some time very when come here just like long make many more only over such take than them well were
		what into also then there their would about which these could other after first where those being should while is
		it in on of to at by an as be or if so we do no up my me he us am`) {
		m[w] = true
	}
	return m
}()

// extractive returns a summary of items (oldest first) made of their most
// representative sentences: each sentence is scored by the mean frequency,
// across all the items, of its terms that are not stop words; the best
// sentences, at most extractiveSentences and extractiveBytes, are joined
// in their original order. Repeated sentences count once.
func extractive(items []store.MemoryItem) string {
	type sentence struct {
		text  string
		terms []string
		pos   int
		score float64
	}
	var sents []sentence
	freq := map[string]int{}
	seen := map[string]bool{}
	for _, it := range items {
		for _, s := range splitSentences(it.Text) {
			key := strings.ToLower(s)
			if seen[key] {
				continue
			}
			seen[key] = true
			var terms []string
			for _, t := range tokenize(s) {
				if !stopwords[t] {
					terms = append(terms, t)
					freq[t]++
				}
			}
			sents = append(sents, sentence{text: s, terms: terms, pos: len(sents)})
		}
	}
	for i := range sents {
		if len(sents[i].terms) == 0 {
			continue
		}
		sum := 0
		for _, t := range sents[i].terms {
			sum += freq[t]
		}
		// The square root favours sentences with several frequent terms
		// over one-word fragments without letting long ones win by length.
		sents[i].score = float64(sum) / math.Sqrt(float64(len(sents[i].terms)))
	}
	order := make([]int, len(sents))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return sents[order[a]].score > sents[order[b]].score })
	var picked []int
	size := 0
	for _, i := range order {
		if len(picked) == extractiveSentences {
			break
		}
		if size > 0 && size+len(sents[i].text)+1 > extractiveBytes {
			continue
		}
		picked = append(picked, i)
		size += len(sents[i].text) + 1
	}
	sort.Ints(picked)
	parts := make([]string, len(picked))
	for k, i := range picked {
		parts[k] = sents[i].text
	}
	out := strings.Join(parts, " ")
	if len(out) > extractiveBytes {
		out = truncateUTF8(out, extractiveBytes)
	}
	return out
}

// splitSentences splits text after '.', '!' or '?' followed by a space,
// and at line breaks; it trims the pieces and drops empty ones.
func splitSentences(text string) []string {
	var out []string
	start := 0
	emit := func(end int) {
		if s := strings.TrimSpace(text[start:end]); s != "" {
			out = append(out, s)
		}
		start = end
	}
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\n':
			emit(i + 1)
		case (c == '.' || c == '!' || c == '?') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n'):
			emit(i + 1)
		}
	}
	emit(len(text))
	return out
}

func truncateUTF8(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// chatMessage, chatRequest and chatResponse are the parts of the OpenAI
// Chat Completions wire format a summary pass uses.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
}

type chatResponse struct {
	Choices []struct {
		Message chatMessage `json:"message"`
	} `json:"choices"`
}

// summaryPrompt instructs the model.
const summaryPrompt = "You compact an agent's memory. Summarize the memory items below into one short paragraph " +
	"that keeps every fact, decision, preference and open task they state. Answer with the summary only."

// modelSummary asks the model router (its OpenAI-compatible
// /v1/chat/completions) to summarize items, oldest first, sending
// authorization as the bearer credential when it is not empty.
func (s *Service) modelSummary(ctx context.Context, model, authorization string, items []store.MemoryItem) (string, error) {
	var b strings.Builder
	for i, it := range items {
		fmt.Fprintf(&b, "%d. [%s] %s\n", i+1, it.CreatedAt.Format("2006-01-02T15:04:05Z"), it.Text)
	}
	body, err := json.Marshal(chatRequest{Model: model, Temperature: 0, Messages: []chatMessage{
		{Role: "system", Content: summaryPrompt}, {Role: "user", Content: b.String()},
	}})
	if err != nil {
		return "", fmt.Errorf("memory: encode summary request: %w", err)
	}
	url := strings.TrimRight(s.cfg.ModelRouterURL, "/") + "/v1/chat/completions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("memory: summary request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "model router unreachable for a summary", "url", url, "err", err)
		return "", apierr.New(apierr.CodeUnavailable, "the model router at %s could not be reached for the summary", s.cfg.ModelRouterURL)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxModelAnswer))
	if err != nil {
		return "", apierr.New(apierr.CodeUnavailable, "reading the model router's answer: %s", err.Error())
	}
	if resp.StatusCode != http.StatusOK {
		s.cfg.Logger.WarnContext(ctx, "model router refused a summary", "status", resp.StatusCode)
		return "", apierr.New(apierr.CodeUnavailable, "the model router answered %d to the summary request", resp.StatusCode).
			WithDetails(map[string]any{"routerStatus": resp.StatusCode})
	}
	var out chatResponse
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 || strings.TrimSpace(out.Choices[0].Message.Content) == "" {
		return "", apierr.New(apierr.CodeUnavailable, "the model router's answer holds no summary (choices[0].message.content)")
	}
	text := strings.TrimSpace(out.Choices[0].Message.Content)
	if len(text) > MaxTextBytes {
		text = truncateUTF8(text, MaxTextBytes)
	}
	return text, nil
}
