// Command fetch is a toolhost plugin that fetches a URL through the host and
// returns it as text, HTML converted to Markdown.
//
// Build: cd plugins && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o fetch.wasm ./fetch
package main

import (
	"fmt"
	"mime"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"

	"github.com/toolhost/toolhost/pdk"
)

const (
	defaultMaxBytes = 100_000
	defaultAgent    = "toolhost-fetch/1 (+https://github.com/toolhost/toolhost)"
)

func init() {
	pdk.Register(pdk.Tool{
		Name:  "fetch",
		Title: "Fetch URL",
		Description: "Fetch a web page or file by URL (HTTP GET) and return its content as text. " +
			"HTML is converted to Markdown unless raw is true; images are returned as images. " +
			"Long content is cut at max_bytes; call again with start_index to read further.",
		InputSchema: `{
			"type": "object",
			"properties": {
				"url": {"type": "string", "format": "uri", "description": "Absolute http or https URL to fetch."},
				"max_bytes": {"type": "integer", "minimum": 1, "description": "Maximum number of bytes of text to return (default 100000, or the plugin's max_bytes config)."},
				"start_index": {"type": "integer", "minimum": 0, "description": "Byte offset in the converted text to start from, to continue a truncated result. Default 0."},
				"raw": {"type": "boolean", "description": "Return the body as received, without HTML-to-Markdown conversion. Default false."}
			},
			"required": ["url"],
			"additionalProperties": false
		}`,
		Annotations: &pdk.Annotations{ReadOnlyHint: true, OpenWorldHint: pdk.Bool(true)},
		Handler:     fetch,
	})
}

type args struct {
	URL        string `json:"url"`
	MaxBytes   int    `json:"max_bytes"`
	StartIndex int    `json:"start_index"`
	Raw        bool   `json:"raw"`
}

func fetch(c *pdk.Call) (*pdk.Result, error) {
	var a args
	if err := c.Bind(&a); err != nil {
		return nil, err
	}
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return pdk.Errorf("url must be an absolute http or https URL, got %q", a.URL), nil
	}
	if a.MaxBytes <= 0 {
		a.MaxBytes = configInt("max_bytes", defaultMaxBytes)
	}
	if a.StartIndex < 0 {
		return pdk.Errorf("start_index must be >= 0"), nil
	}
	agent, ok := pdk.Config("user_agent")
	if !ok || agent == "" {
		agent = defaultAgent
	}
	resp, err := pdk.HTTP(pdk.Request{
		URL: u.String(),
		Header: map[string]string{
			"User-Agent": agent,
			"Accept":     "text/html,application/xhtml+xml,text/markdown,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.8",
		},
	})
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return pdk.Errorf("fetching %s failed: HTTP %d%s", u, resp.Status, snippet(resp.Body)), nil
	}

	kind, mediaType := classify(resp)
	switch kind {
	case kindImage:
		return pdk.NewResult(
			pdk.TextContent(fmt.Sprintf("Image %s (%s, %d bytes)", u, mediaType, len(resp.Body))),
			pdk.ImageContent(resp.Body, mediaType),
		), nil
	case kindBinary:
		return pdk.Errorf("%s has content type %s (%d bytes), which is not text; fetch returns text, HTML and images only", u, mediaType, len(resp.Body)), nil
	}

	text := string(resp.Body)
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	if kind == kindHTML && !a.Raw {
		md, title, err := toMarkdown(text, u)
		if err != nil {
			return pdk.Errorf("converting the HTML of %s to Markdown failed: %v (call again with raw=true for the HTML)", u, err), nil
		}
		text = md
		if title != "" {
			text = "# " + title + "\n\n" + text
		}
	}
	return pdk.Text(window(text, u.String(), a.StartIndex, a.MaxBytes)), nil
}

const (
	kindText = iota
	kindHTML
	kindImage
	kindBinary
)

// classify decides how to present the body, from the Content-Type header when
// the host passes headers on, otherwise by sniffing the first bytes.
func classify(resp *pdk.Response) (kind int, mediaType string) {
	if ct := resp.Header["content-type"]; ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err == nil {
			switch {
			case mt == "text/html" || mt == "application/xhtml+xml":
				return kindHTML, mt
			case strings.HasPrefix(mt, "image/") && mt != "image/svg+xml":
				return kindImage, mt
			case strings.HasPrefix(mt, "text/") || mt == "image/svg+xml" ||
				strings.HasSuffix(mt, "json") || strings.HasSuffix(mt, "xml") ||
				mt == "application/javascript" || mt == "application/x-yaml" || mt == "application/yaml":
				return kindText, mt
			}
			if !looksBinary(resp.Body) {
				return kindText, mt
			}
			return kindBinary, mt
		}
	}
	return sniff(resp.Body)
}

func sniff(b []byte) (int, string) {
	head := b
	if len(head) > 512 {
		head = head[:512]
	}
	switch {
	case hasPrefix(head, "\x89PNG\r\n\x1a\n"):
		return kindImage, "image/png"
	case hasPrefix(head, "\xff\xd8\xff"):
		return kindImage, "image/jpeg"
	case hasPrefix(head, "GIF87a"), hasPrefix(head, "GIF89a"):
		return kindImage, "image/gif"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return kindImage, "image/webp"
	}
	if looksBinary(head) {
		return kindBinary, "application/octet-stream"
	}
	lower := strings.ToLower(strings.TrimLeft(string(head), " \t\r\n\ufeff"))
	for _, p := range []string{"<!doctype html", "<html", "<head", "<body", "<title", "<div", "<p>", "<h1", "<!--"} {
		if strings.HasPrefix(lower, p) {
			return kindHTML, "text/html"
		}
	}
	return kindText, "text/plain"
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

func looksBinary(b []byte) bool {
	if len(b) > 1024 {
		b = b[:1024]
	}
	for _, c := range b {
		if c == 0 {
			return true
		}
	}
	return false
}

var converter = htmltomarkdown.NewConverter(htmltomarkdown.WithPlugins(
	base.NewBasePlugin(),
	commonmark.NewCommonmarkPlugin(),
	table.NewTablePlugin(),
	strikethrough.NewStrikethroughPlugin(),
))

// toMarkdown converts an HTML document to Markdown (links made absolute
// against base) and returns its <title>.
func toMarkdown(doc string, baseURL *url.URL) (md, title string, err error) {
	root, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		return "", "", err
	}
	title = findTitle(root)
	out, err := converter.ConvertNode(root, htmltomarkdown.WithDomain(baseURL.Scheme+"://"+baseURL.Host))
	if err != nil {
		return "", "", err
	}
	return string(out), title, nil
}

func findTitle(n *html.Node) string {
	if n.Type == html.ElementNode && n.Data == "title" {
		var sb strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.TextNode {
				sb.WriteString(c.Data)
			}
		}
		return strings.Join(strings.Fields(sb.String()), " ")
	}
	if n.Type == html.ElementNode && n.Data == "body" {
		return ""
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if t := findTitle(c); t != "" {
			return t
		}
	}
	return ""
}

// window returns text[start:start+max] cut on rune boundaries, with a note
// when there is more, so the model knows to call again.
func window(text, u string, start, max int) string {
	total := len(text)
	if start >= total {
		if total == 0 {
			return "(empty response body)"
		}
		return fmt.Sprintf("(no more content: start_index %d is past the end, the text is %d bytes long)", start, total)
	}
	for start > 0 && !utf8.RuneStart(text[start]) {
		start--
	}
	end := start + max
	if end >= total {
		return text[start:]
	}
	for end > start && !utf8.RuneStart(text[end]) {
		end--
	}
	return text[start:end] + fmt.Sprintf("\n\n[Content truncated: showed bytes %d-%d of %d. Call fetch again with url=%q and start_index=%d to continue.]", start, end, total, u, end)
}

// snippet returns the start of an error body for the error message.
func snippet(b []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), ""))
	if s == "" || looksBinary(b) {
		return ""
	}
	if len(s) > 300 {
		s = s[:300]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return ": " + s
}

func configInt(key string, def int) int {
	if v, ok := pdk.Config(key); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
			return n
		}
		pdk.Logf(pdk.LevelWarn, "config %s=%q is not a positive integer; using %d", key, v, def)
	}
	return def
}

func main() {}
