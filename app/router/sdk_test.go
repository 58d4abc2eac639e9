package router_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/require"
)

// TestOpenAISDK calls the router with the official OpenAI Go client, as
// any framework built on it does by changing the base URL: non-streamed,
// streamed (through both providers), tool calls, embeddings, models and
// an error.
func TestOpenAISDK(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	client := openai.NewClient(option.WithBaseURL(e.url+"/v1/"), option.WithAPIKey(e.bot()), option.WithMaxRetries(0))
	ctx := t.Context()
	params := openai.ChatCompletionNewParams{
		Model:    "bot",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Hello")},
	}

	got, err := client.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, "Hello from OpenAI.", got.Choices[0].Message.Content)
	require.EqualValues(t, 17, got.Usage.TotalTokens)

	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather", Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	})}
	withTools := params
	withTools.Tools = tools
	got, err = client.Chat.Completions.New(ctx, withTools)
	require.NoError(t, err)
	require.Equal(t, "get_weather", got.Choices[0].Message.ToolCalls[0].Function.Name)

	for _, provider := range []string{"openai", "anthropic"} {
		if provider == "anthropic" {
			e.oa.set("500")
		}
		stream := client.Chat.Completions.NewStreaming(ctx, withTools)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		require.NoError(t, stream.Err(), provider)
		require.NoError(t, stream.Close())
		require.Len(t, acc.Choices, 1, provider)
		call := acc.Choices[0].Message.ToolCalls[0]
		require.Equal(t, "get_weather", call.Function.Name, provider)
		require.JSONEq(t, `{"city":"Paris"}`, call.Function.Arguments, provider)
		require.Equal(t, "tool_calls", acc.Choices[0].FinishReason, provider)
	}

	e.oa.set("midstream")
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	for stream.Next() {
	}
	require.ErrorContains(t, stream.Err(), "mid-stream", "a provider that fails mid-stream ends the stream with an error")
	e.oa.set("ok")

	emb := openai.NewClient(option.WithBaseURL(e.url+"/v1/"), option.WithAPIKey(e.token("default", "default", "emb", "dev")), option.WithMaxRetries(0))
	er, err := emb.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "embedder", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello")}})
	require.NoError(t, err)
	require.Equal(t, []float64{0.1, -0.2, 0.3}, er.Data[0].Embedding)

	page, err := client.Models.List(ctx)
	require.NoError(t, err)
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	require.ElementsMatch(t, []string{"primary", "claude"}, ids)

	bad := params
	bad.Model = "small"
	_, err = client.Chat.Completions.New(ctx, bad)
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, http.StatusForbidden, apiErr.StatusCode)
	require.Equal(t, "Forbidden", apiErr.Code)
}
