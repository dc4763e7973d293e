package transport

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nopConn is an mcp.Connection that accepts every write and has nothing to
// read.
type nopConn struct{ mcp.Connection }

func (nopConn) Write(context.Context, jsonrpc.Message) error { return nil }

// TestSizeSlotStaysWithItsTransport: a call's context that reaches another
// Stdio's connection (a request the server makes during the call, handled
// with a call to another server) binds nothing there, so nothing is left
// behind in that transport's table.
func TestSizeSlotStaysWithItsTransport(t *testing.T) {
	var a, b sizeTable
	ctx := context.WithValue(context.Background(), sizeSlotKey{&a}, &sizeSlot{})
	id, _ := jsonrpc.MakeID(float64(7))
	call := &jsonrpc.Request{ID: id, Method: "tools/call", Params: []byte(`{"name":"x"}`)}
	if err := (&sizedConn{Connection: nopConn{}, sizes: &b}).Write(ctx, call); err != nil {
		t.Fatal(err)
	}
	if n := b.waiting(); n != 0 {
		t.Errorf("the other transport binds %d IDs to a slot not its own", n)
	}
	if err := (&sizedConn{Connection: nopConn{}, sizes: &a}).Write(ctx, call); err != nil {
		t.Fatal(err)
	}
	if n := a.waiting(); n != 1 {
		t.Errorf("its own transport binds %d IDs, want 1", n)
	}
}
