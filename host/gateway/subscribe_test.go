package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testutil"
)

// TestResourceSubscriptions: the gateway advertises resources.subscribe and
// accepts resources/subscribe and resources/unsubscribe (the conformance
// scenarios resources-subscribe and resources-unsubscribe); a URI it does
// not serve is -32602 (resource not found); a subscriber hears notifications/resources/updated
// when the backend lists the resource differently, and an unsubscribed
// client no longer does. The backend is a real go-sdk server over Streamable
// HTTP on loopback.
func TestResourceSubscriptions(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "up"}, nil)
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
	}
	up.AddResource(&mcp.Resource{URI: "up://doc", Name: "doc", Size: 1}, read)
	up.AddResource(&mcp.Resource{URI: "up://other", Name: "other", Size: 1}, read)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(srv.Close) // after the host's Close (cleanups run last first)
	f := start(t, "[servers.up]\nurl = \""+srv.URL+"\"\n")

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	updated := make(chan string, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
	})
	// Protocol 2025-11-25: resources/subscribe and resources/unsubscribe,
	// as the conformance suite sends them. (From 2026-07-28 the go-sdk
	// client subscribes with subscriptions/listen, which the go-sdk server
	// turns into the same SubscribeHandler call.)
	cs := memSession(t, f, client, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})

	if caps := cs.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe {
		t.Fatalf("capabilities %+v: want resources.subscribe", caps.Resources)
	}
	var rpcErr *jsonrpc.Error
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "up://nope"}); !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("subscribe to an unserved URI: %v; want code %d", err, jsonrpc.CodeInvalidParams)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "up://doc"}); err != nil {
		t.Fatal(err)
	}
	up.AddResource(&mcp.Resource{URI: "up://doc", Name: "doc", Size: 2}, read)
	select {
	case uri := <-updated:
		if uri != "up://doc" {
			t.Fatalf("updated %q; want up://doc", uri)
		}
	case <-ctx.Done():
		t.Fatal("no notifications/resources/updated after the backend changed up://doc")
	}

	// Unsubscribed from doc, subscribed to other: a change to doc, then
	// one to other, bring only other's notification (the gateway handles
	// the backend's changes in order, so doc's would have come first).
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "up://doc"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "up://other"}); err != nil {
		t.Fatal(err)
	}
	up.AddResource(&mcp.Resource{URI: "up://doc", Name: "doc", Size: 3}, read)
	// Let the doc change reach the gateway first: wait until it lists it.
	testutil.Eventually(t, waitTimeout, func() bool {
		res, err := f.h.Resources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(res) == 2 && res[0].URI == "up://doc" && res[0].Size == 3
	}, "the host never listed the changed up://doc")
	up.AddResource(&mcp.Resource{URI: "up://other", Name: "other", Size: 2}, read)
	select {
	case uri := <-updated:
		if uri != "up://other" {
			t.Fatalf("updated %q after unsubscribing from it; want only up://other", uri)
		}
	case <-ctx.Done():
		t.Fatal("no notifications/resources/updated after the backend changed up://other")
	}
}
