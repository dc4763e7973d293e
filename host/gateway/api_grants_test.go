package gateway_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/gateway"
	"github.com/toolhost/toolhost/host/store"
)

// TestOpenAPIGrantSchemas: the document's Grant, GrantRequest and
// GrantList schemas have exactly the JSON members of the types the API
// answers and reads.
func TestOpenAPIGrantSchemas(t *testing.T) {
	raw, err := os.ReadFile("openapi/api.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"Grant": store.Grant{}, "GrantRequest": gateway.GrantRequest{}, "GrantList": gateway.GrantList{}} {
		var want, got []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			if tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
				want = append(want, tag)
			}
		}
		for p := range doc.Components.Schemas[name].Properties {
			got = append(got, p)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("components.schemas.%s has %v; the type's JSON members are %v", name, got, want)
		}
	}
	for path, methods := range map[string][]string{"/api/v1/grants": {"post", "get"}, "/api/v1/grants/{id}": {"delete"}} {
		for _, m := range methods {
			if doc.Paths[path][m] == nil {
				t.Errorf("openapi: no %s %s", m, path)
			}
		}
	}
}
