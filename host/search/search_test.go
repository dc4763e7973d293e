package search

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func terms(s string) []string {
	var out []string
	Terms(s, func(t string) bool { out = append(out, t); return true })
	return out
}

func TestTerms(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"fs__read_text_file", "fs read text file"},
		{"GitHub and github", "git hub github github"},
		{"readTextFile", "read text file readtextfil"},
		{"HTTPServer", "http server httpserver"},
		{"list-directories", "list directory"},
		{"Creating the files", "creat file"},
		{"create_file", "creat file"},
		{"deleted entries", "delet entry"},
		{"process", "process"},
		{"processes", "process"},
		{"v2Api", "v2 api v2api"},
		{"日本語 テキスト", "日本語 テキスト"},
		{"\xff\xfebad\xffutf8", "bad utf8"},
		{"", ""},
		{"the of a", ""},
	} {
		if got := strings.Join(terms(c.in), " "); got != c.want {
			t.Errorf("Terms(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

var docs = []Doc{
	{Name: "fs__read_text_file", Description: "Read the complete contents of a file from the file system as text.", Params: []Param{{"path", "Path of the file"}}},
	{Name: "fs__write_file", Description: "Create a new file or completely overwrite an existing file with new content.", Params: []Param{{"path", ""}, {"content", ""}}},
	{Name: "fs__list_directory", Description: "Get a detailed listing of all files and directories in a specified path."},
	{Name: "github__create_issue", Title: "Create issue", Description: "Create a new issue in a GitHub repository", Params: []Param{{"owner", ""}, {"repo", ""}, {"title", ""}}},
	{Name: "memory__create_entities", Description: "Create multiple new entities in the knowledge graph"},
	{Name: "web__fetch", Description: "Fetches a URL from the internet and extracts its contents as markdown."},
}

func TestSearchRanks(t *testing.T) {
	ix := New(docs)
	for _, c := range []struct{ q, want string }{
		{"read a file", "fs__read_text_file"},
		{"show what is in a folder directory", "fs__list_directory"},
		{"open a bug report issue on github", "github__create_issue"},
		{"download a web page url", "web__fetch"},
		{"knowledge graph entity", "memory__create_entities"},
		{"overwrite", "fs__write_file"},
	} {
		hits, err := ix.Search(c.q, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || hits[0].Name != c.want {
			t.Errorf("Search(%q) = %v, want %s first", c.q, hits, c.want)
		}
	}
}

func TestSearchDeterministicTies(t *testing.T) {
	same := []Doc{{Name: "b__x", Description: "echo"}, {Name: "a__x", Description: "echo"}, {Name: "c__x", Description: "echo"}}
	for range 20 {
		hits, err := New(same).Search("echo", 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, h := range hits {
			names = append(names, h.Name)
		}
		if !slices.Equal(names, []string{"a__x", "b__x", "c__x"}) {
			t.Fatalf("ties not by name: %v", names)
		}
	}
}

func TestSearchKeepAndLimit(t *testing.T) {
	ix := New(docs)
	hits, err := ix.Search("file", 1, func(n string) bool { return n != "fs__read_text_file" })
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Name == "fs__read_text_file" {
		t.Fatalf("keep/limit not applied: %v", hits)
	}
	hits, _ = ix.Search("file", 0, nil)
	if len(hits) != 3 {
		t.Fatalf("limit 0: %d hits, want all 3 matches (DefaultLimit %d)", len(hits), DefaultLimit)
	}
}

func TestSearchBadInput(t *testing.T) {
	ix := New(docs)
	for _, c := range []struct {
		q     string
		limit int
		want  error
	}{
		{strings.Repeat("a", MaxQueryBytes+1), 5, ErrQueryTooLong},
		{"", 5, ErrEmptyQuery},
		{"  ,;!? ", 5, ErrEmptyQuery},
		{"the of", 5, ErrEmptyQuery},
		{"file", -1, ErrLimit},
		{"file", MaxLimit + 1, ErrLimit},
	} {
		if _, err := ix.Search(c.q, c.limit, nil); !errors.Is(err, c.want) {
			t.Errorf("Search(%.20q, %d) = %v, want %v", c.q, c.limit, err, c.want)
		}
	}
	if hits, err := (*Index)(nil).Search("file", 5, nil); err != nil || hits != nil {
		t.Errorf("nil index: %v %v", hits, err)
	}
	if hits, err := ix.Search("zzzunknown", 5, nil); err != nil || len(hits) != 0 {
		t.Errorf("no match: %v %v", hits, err)
	}
}

// TestHostileDocs: huge and odd fields index with bounded terms, and
// searching still works.
func TestHostileDocs(t *testing.T) {
	huge := strings.Repeat("word ", 1<<20) // 5 MiB description
	d := []Doc{
		{Name: "x__huge", Description: huge, Title: strings.Repeat("Ω", 1<<16)},
		{Name: "x__many", Params: make([]Param, 10000)},
		{Name: "x__bin", Description: "\x00\x01\xff\xfe" + strings.Repeat("\u200b", 1000)},
		{Name: "x__ok", Description: "find words"},
	}
	ix := New(d)
	if n := len(ix.postings["word"]); n != 2 { // x__huge and x__ok
		t.Fatalf("postings of word: %d", n)
	}
	hits, err := ix.Search("word", 5, nil)
	if err != nil || len(hits) == 0 {
		t.Fatalf("%v %v", hits, err)
	}
}

func TestParamsOf(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"the file"},"opts":{"type":"object","properties":{"depth":{"title":"Depth"}}},"flag":true}}`)
	got := fmt.Sprint(ParamsOf(schema))
	want := "[{flag } {opts } {opts.depth Depth} {path the file}]"
	if got != want {
		t.Fatalf("ParamsOf = %s, want %s", got, want)
	}
	if ParamsOf(map[string]any{"properties": 3}) != nil || ParamsOf(nil) != nil || ParamsOf(json.RawMessage("{")) != nil {
		t.Fatal("bad schemas must give no params")
	}
	many := map[string]any{}
	props := map[string]any{}
	for i := range 500 {
		props[fmt.Sprint("p", i)] = map[string]any{"type": "string"}
	}
	many["properties"] = props
	if n := len(ParamsOf(many)); n != MaxParams {
		t.Fatalf("%d params, want %d", n, MaxParams)
	}
}

func FuzzSearch(f *testing.F) {
	f.Add("read file", "fs__read_file", "Read a file", `{"properties":{"path":{"description":"p"}}}`, 5)
	f.Add("\xff", "HTTPServer", "", `{}`, 0)
	f.Add("ÀÉ camelCaseX", "aBC__dEF", "ÿ", `{"properties":{"a":true}}`, 50)
	f.Fuzz(func(t *testing.T, q, name, desc, schema string, limit int) {
		ix := New([]Doc{{Name: name, Description: desc, Params: ParamsOf(json.RawMessage(schema))}, {Name: "z", Description: q}})
		hits, err := ix.Search(q, limit, nil)
		if err != nil {
			return
		}
		if len(hits) > MaxLimit {
			t.Fatalf("%d hits", len(hits))
		}
		for _, h := range hits {
			if h.Score <= 0 || h.Score != h.Score {
				t.Fatalf("bad score %v", h)
			}
		}
	})
}
