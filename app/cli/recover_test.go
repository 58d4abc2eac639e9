package cli

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/warden-dev/warden/app/auth"
	"github.com/warden-dev/warden/app/listener/listenertest"
	"github.com/warden-dev/warden/app/store"
)

// panickyStore panics when an API key's secret is panicKey: every
// listener looks its caller's key up first, so a request with that key
// panics in whichever handler serves it.
type panickyStore struct{ store.Store }

// panicKey is the API key whose lookup panics.
const panicKey = auth.APIKeyPrefix + "panicpanicpanicpanicpanicpanic"

func (s panickyStore) APIKeyLookup(ctx context.Context, secretHash string) (*store.APIKey, error) {
	if secretHash == auth.HashAPIKey(panicKey) {
		panic("the store lost its mind")
	}
	return s.Store.APIKeyLookup(ctx, secretHash)
}

// TestEveryListenerRecoversFromPanics builds the process up builds, with
// every listener, and checks that each one answers a request whose handler
// panics with a 500 (gRPC: Internal) naming a request id that the log has
// with the stack, and goes on serving.
func TestEveryListenerRecoversFromPanics(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	logs := &syncBuffer{}
	a := &app{env: upEnv(home, logs, logs)}
	const host = "127.0.0.1"
	var p *process
	var ports []int
	for attempt := 1; ; attempt++ {
		ports = nil
		for _, s := range freePorts(t, 9) {
			n, err := strconv.Atoi(s)
			require.NoError(t, err)
			ports = append(ports, n)
		}
		control, gateway, mcpPort, router, memPort, ragPort := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]
		listeners, err := bindListeners(host, control, gateway, router)
		if err == nil {
			err = listeners.BindMCP(net.JoinHostPort(host, strconv.Itoa(mcpPort)))
		}
		var rag *ragService
		var memLn net.Listener
		if err == nil {
			rag, err = bindRAG(host, ragOptions{port: ragPort})
		}
		if err == nil {
			memLn, err = bindMemory(host, memPort)
		}
		if err == nil {
			spec := processSpec{storeURL: "sqlite://" + filepath.Join(home, "warden.db"), dataDir: home, home: home, listenHost: host,
				listeners: listeners, gateway: true, gatewayAddr: net.JoinHostPort(host, strconv.Itoa(gateway)),
				routerAddr: net.JoinHostPort(host, strconv.Itoa(router)), mcpAddr: net.JoinHostPort(host, strconv.Itoa(mcpPort)),
				memLn: memLn, rag: rag, ragOpts: ragOptions{port: ragPort},
				trace:     traceOptions{queryPort: ports[6], httpPort: ports[7], grpcPort: ports[8], retention: time.Hour},
				wrapStore: func(s store.Store) store.Store { return panickyStore{s} }}
			spec.controlURL = spec.serviceURL(control)
			spec.publicURL = spec.controlURL
			spec.gatewayURL, spec.mcpURL, spec.memoryURL = spec.serviceURL(gateway), spec.serviceURL(mcpPort), spec.serviceURL(memPort)
			p, err = a.buildProcess(t.Context(), spec)
		} else {
			listeners.Close()
			rag.close()
		}
		if err == nil {
			break
		}
		require.Less(t, attempt, 3, "the listeners could not be bound three times: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		p.close()
	})
	require.NoError(t, p.start(ctx))
	go func() { done <- p.serve(ctx) }()

	url := func(port int, path string) string {
		return "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + path
	}
	cases := []struct {
		name        string
		method, url string
		body        string
	}{
		{"control plane", http.MethodGet, url(ports[0], "/v1/namespaces/default/agents"), ""},
		{"tool gateway", http.MethodPost, url(ports[1], "/v1/tool-calls"), `{}`},
		{"MCP gateway", http.MethodPost, url(ports[2], "/v1/mcp/docs/call"), `{}`},
		{"model router", http.MethodGet, url(ports[3], "/v1/models"), ""},
		{"memory", http.MethodPost, url(ports[4], "/v1/memory/notes/query"), `{}`},
		{"RAG", http.MethodPost, url(ports[5], "/v1/rag/docs/retrieve"), `{}`},
		{"trace query", http.MethodGet, url(ports[6], "/v1/traces"), ""},
		{"OTLP/HTTP", http.MethodPost, url(ports[7], "/v1/traces"), `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			request := func(key string) func() *http.Request {
				return func() *http.Request {
					req, err := http.NewRequestWithContext(t.Context(), tc.method, tc.url, strings.NewReader(tc.body))
					require.NoError(t, err)
					req.Header.Set("Content-Type", "application/json")
					if key != "" {
						req.Header.Set("Authorization", "Bearer "+key)
					}
					return req
				}
			}
			// Without a credential the same request is refused, not failed.
			listenertest.RequirePanicRecovered(t, request(panicKey), request(""), logs)
		})
	}
	t.Run("OTLP/gRPC", func(t *testing.T) {
		conn, err := grpc.NewClient(net.JoinHostPort(host, strconv.Itoa(ports[8])), grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer conn.Close()
		client := collectortrace.NewTraceServiceClient(conn)
		listenertest.RequireGRPCPanicRecovered(t,
			func(ctx context.Context, opts ...grpc.CallOption) error {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+panicKey)
				_, err := client.Export(ctx, &collectortrace.ExportTraceServiceRequest{}, opts...)
				return err
			},
			func(ctx context.Context) error {
				_, err := client.Export(ctx, &collectortrace.ExportTraceServiceRequest{})
				return err
			}, logs)
	})
}
