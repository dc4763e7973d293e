package config

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestOAuthSecretExpandedButNeverEncoded(t *testing.T) {
	cfg, err := Load(goldenDir+"/oauth.toml", &Options{LookupEnv: lookupIn(goldenEnv)})
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Servers["batch"].OAuth
	if o.ClientSecret != "ek-123" || o.Grant != GrantClientCredentials {
		t.Fatalf("batch oauth = %+v", o)
	}
	if g := cfg.Servers["hosted"].OAuth; g == nil || g.Grant != GrantAuthorizationCode {
		t.Fatalf("an empty [servers.hosted.oauth] table = %+v; want the default grant", g)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "ek-123") {
		t.Error("the client secret is in the configuration's JSON encoding")
	}
}

func TestOAuthValidateGoConfig(t *testing.T) {
	c := &Config{Servers: map[string]*Server{
		"local": {Command: "x", OAuth: &OAuth{}},
		"cc":    {URL: "http://127.0.0.1:1/mcp", OAuth: &OAuth{Grant: GrantClientCredentials}},
	}}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "servers.local.oauth: is only used by HTTP servers") ||
		!strings.Contains(err.Error(), "servers.cc.oauth: grant \"client_credentials\" needs client_id and client_secret") {
		t.Fatalf("Validate = %v", err)
	}
}
