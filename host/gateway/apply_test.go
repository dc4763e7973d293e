package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/config"
	"github.com/toolhost/toolhost/internal/testutil"
)

// TestApplyServesNewProfiles: after Host.Apply adds a profile with a new
// client token, that client is served its profile's view without a
// restart; a client whose token the new configuration drops is refused
// (401), and its open session is closed; a client whose token stays keeps
// its session.
func TestApplyServesNewProfiles(t *testing.T) {
	f := start(t, testConfig)
	url := serveLoopback(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()

	alice, err := connectHTTP(ctx, url, "alice-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	bob, err := connectHTTP(ctx, url, "bob-token-0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if _, err := connectHTTP(ctx, url, "carol-token-0123456789"); err == nil {
		t.Fatal("carol was served before her token was configured")
	}

	// The new configuration: alice gone, carol added with a new profile.
	src := strings.Replace(testConfig, `[serve.clients.alice]
token   = "alice-token-0123456789"
profile = "review"`, `[profiles.ops]
allow = ["fx__add"]

[serve.clients.carol]
token   = "carol-token-0123456789"
profile = "ops"`, 1)
	if src == testConfig {
		t.Fatal("test config changed: cannot remove alice")
	}
	cfg, err := config.Parse([]byte(strings.ReplaceAll(src, "@FIXTURE@", testutil.Fixture(t))), &config.Options{Name: "new.toml"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}

	// The gateway follows the Host's event: wait until carol is served.
	var carol *mcp.ClientSession
	testutil.Eventually(t, waitTimeout, func() bool {
		carol, err = connectHTTP(ctx, url, "carol-token-0123456789")
		return err == nil
	}, func() string { return fmt.Sprintf("carol never served: %v", err) })
	defer carol.Close()
	if got := toolNames(t, carol); !slices.Equal(got, []string{"fx__add"}) {
		t.Errorf("carol (profile ops) sees %v, want [fx__add]", got)
	}
	if _, err := connectHTTP(ctx, url, "alice-token-0123456789"); err == nil {
		t.Error("alice is still served after her token was removed")
	}
	// Alice's open session was closed with her profile's server.
	if _, err := alice.ListTools(ctx, nil); err == nil {
		t.Error("alice's session still answers")
	}
	// Bob keeps his session (the default profile stays served).
	if _, err := bob.ListTools(ctx, nil); err != nil {
		t.Errorf("bob's session: %v", err)
	}
}
