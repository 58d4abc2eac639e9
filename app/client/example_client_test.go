package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/warden-dev/warden/app/apierr"
	"github.com/warden-dev/warden/app/client"
)

// ExampleClient_Apply applies a manifest and prints what the server did.
func ExampleClient_Apply() {
	// A stand-in for the control plane; real code points at `warden up`.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"apiVersion":"warden.dev/v1alpha1","kind":"api.ApplyResult",
			"items":[{"kind":"Agent","namespace":"default","name":"support-bot","action":"created","resourceVersion":"3","generation":1}],
			"manifests":["support-bot-g1"]}`)
	}))
	defer srv.Close()

	c := client.New(srv.URL, "wk_example")
	res, err := c.Apply(context.Background(), []byte("apiVersion: warden.dev/v1alpha1\nkind: Agent\n…"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, it := range res.Items {
		fmt.Println(it.Kind, it.Name, it.Action)
	}
	fmt.Println(res.Manifests)
	// Output:
	// Agent support-bot created
	// [support-bot-g1]
}

// ExampleDiagnostics shows how a rejected apply reports every problem.
func ExampleDiagnostics() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"error":{"code":"AdmissionRejected","message":"1 document rejected","details":{"diagnostics":[
			{"document":1,"kind":"Tool","namespace":"default","name":"zendesk.reply","path":"spec.sideEffect","code":"NotSupported","message":"must be one of read_only, …"}]}}}`)
	}))
	defer srv.Close()

	_, err := client.New(srv.URL, "wk_example").Apply(context.Background(), []byte("…"))
	if e, ok := apierr.As(err); ok {
		fmt.Println(client.StatusCode(err), e.Code)
	}
	for _, d := range client.Diagnostics(err) {
		fmt.Printf("document %d (%s %s): %s: %s\n", d.Document, d.Kind, d.Name, d.Path, d.Code)
	}
	// Output:
	// 422 AdmissionRejected
	// document 1 (Tool zendesk.reply): spec.sideEffect: NotSupported
}
