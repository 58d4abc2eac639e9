package agbom_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warden-dev/warden/app/agbom"
)

// BenchmarkServiceGet50Tools measures the API's work for an agent of 50
// tools on each store: reading the stored BOM from the manifest's
// status and rendering it (get+<format>), and a refresh that rebuilds the
// BOM from the store and finds it unchanged (refresh).
func BenchmarkServiceGet50Tools(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) { benchServiceGet(b, backends()[name](b)) })
	}
}

func benchServiceGet(b *testing.B, storeURL string) {
	e := newEnv(b, storeURL, false)
	var sb strings.Builder
	var tools []string
	for i := range 50 {
		name := fmt.Sprintf("svc%02d.action", i)
		tools = append(tools, "{name: "+name+"}")
		fmt.Fprintf(&sb, `---
apiVersion: warden.dev/v1alpha1
kind: Tool
metadata: {name: %s, namespace: support}
spec:
  source: rest
  sideEffect: read_only
  rest: {url: "https://api.example.com/%s"}
  inputSchema: {type: object, required: [id], properties: {id: {type: string}, amount: {type: number, minimum: 0}}}
`, name, name)
	}
	// The fixture's agent with its tool list replaced by the 50 tools.
	body := string(fixture(b))
	i, j := strings.Index(body, "  tools:\n"), strings.Index(body, "  mcpServers:")
	body = body[:i] + "  tools: [" + strings.Join(tools, ", ") + "]\n" + body[j:]
	e.apply(b, []byte(body+sb.String()))
	e.next(b)
	ctx := context.Background()
	bom, err := e.svc.Get(ctx, tenant, "support", "support-bot", 0)
	require.NoError(b, err)
	require.Equal(b, 63, len(bom.Components)) // as in BenchmarkAgBOM50Tools
	for _, format := range agbom.Formats() {
		b.Run("get+"+format, func(b *testing.B) {
			for b.Loop() {
				bom, err := e.svc.Get(ctx, tenant, "support", "support-bot", 0)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := agbom.Render(bom, format); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("refresh", func(b *testing.B) {
		for b.Loop() {
			if _, changed, err := e.svc.Refresh(ctx, tenant, "support", "support-bot", 0, ""); err != nil || changed {
				b.Fatal(err, changed)
			}
		}
	})
}
