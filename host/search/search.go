// Package search is the in-memory tool search index of toolhost (issue 27,
// item 1): BM25 ranking over each tool's name, title, description and
// input-schema parameter names and descriptions.
//
// An Index is built once from a list of Docs (New) and is immutable after:
// searches run concurrently without locks, and a changed catalogue is a new
// Index (the host rebuilds it when its catalogue changes). Building costs
// O(total indexed text); a search costs O(the postings of the query's
// terms) plus a sort of the matching documents.
//
// # Ranking
//
// The score is BM25F (Robertson and Zaragoza, "The Probabilistic Relevance
// Framework: BM25 and Beyond", 2009, section 3.6): for each query term t
// and document d, the field frequencies are length-normalised per field and
// summed with the field weights,
//
//	tf'(t,d) = Σ_f W_f · tf(t,d,f) / (1 − B + B · len(d,f) / avglen(f))
//
// and the score is Σ_t idf(t) · tf'(t,d) · (K1 + 1) / (K1 + tf'(t,d)), with
// idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5)) over the N documents
// of the Index. K1 = 1.2 and B = 0.75 are the usual defaults; the field
// weights are WeightName (3), WeightTitle (2), WeightDescription (1),
// WeightParamName (1) and WeightParamDescription (0.5): a word in a tool's
// name says more about what it does than one in a parameter's description.
//
// # Text
//
// Text is split into terms at every character that is not a letter or a
// digit and at camelCase boundaries ("readTextFile", "HTTPServer",
// "read_text-file" and "fs__read" all split; a camelCase run is indexed
// whole too, so "GitHub" is github, git and hub), lowercased, stripped of
// English stop words ("the", "a", "of", ...) and reduced by a light English
// stemmer (plurals, -ing, -ed, a final -e: "directories" and "directory",
// "creating" and "create" meet). Only the first MaxFieldBytes of a field,
// MaxParams parameters and MaxTermsPerField terms per field are indexed, so a
// hostile description costs bounded memory; invalid UTF-8 is a separator.
//
// Ties are broken by name, so equal inputs always give the same ranking.
package search

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// BM25 parameters and field weights (see the package comment).
const (
	K1 = 1.2
	B  = 0.75

	WeightName             = 3.0
	WeightTitle            = 2.0
	WeightDescription      = 1.0
	WeightParamName        = 1.0
	WeightParamDescription = 0.5
)

// Bounds on what is indexed and searched.
const (
	// MaxQueryBytes bounds a query; a longer one is ErrQueryTooLong.
	MaxQueryBytes = 1024
	// MaxQueryTerms bounds the distinct terms of a query that are scored;
	// the rest are ignored.
	MaxQueryTerms = 32
	// DefaultLimit is the number of hits of a search with limit 0.
	DefaultLimit = 5
	// MaxLimit bounds limit; a larger one is ErrLimit.
	MaxLimit = 50
	// MaxFieldBytes bounds the text of one field that is indexed (a longer
	// description is indexed up to there).
	MaxFieldBytes = 8 << 10
	// MaxTermsPerField bounds the terms indexed from one field.
	MaxTermsPerField = 1024
	// MaxParams bounds the parameters of one tool that are indexed.
	MaxParams = 64
	// maxTermBytes: a longer "word" (a hash, base64) is not indexed.
	maxTermBytes = 48
)

// Errors of Search.
var (
	// ErrQueryTooLong: the query has more than MaxQueryBytes bytes.
	ErrQueryTooLong = errors.New("search: query too long")
	// ErrEmptyQuery: the query has no term that can be searched (empty,
	// only punctuation or only stop words).
	ErrEmptyQuery = errors.New("search: query has no searchable words")
	// ErrLimit: limit is negative or above MaxLimit.
	ErrLimit = errors.New("search: limit out of range")
)

// Param is one input parameter of a tool: a property of its inputSchema.
type Param struct {
	Name        string
	Description string
}

// Doc is one tool to index.
type Doc struct {
	// Name is the tool's catalogue name ("fs__read_text_file"); it is
	// what Hit.Name reports and what ties are broken by.
	Name        string
	Title       string
	Description string
	// Params are its parameters (ParamsOf extracts them from an
	// inputSchema).
	Params []Param
}

// Hit is one search result.
type Hit struct {
	// Doc is the index of the document in the slice given to New.
	Doc   int
	Name  string
	Score float64
}

// posting is one document's weighted, length-normalised term frequency
// (tf' of the package comment) for one term.
type posting struct {
	doc int32
	tf  float32
}

// Index is an immutable BM25 index over a list of Docs. The zero value is
// an empty index. It is safe for concurrent use.
type Index struct {
	names    []string
	postings map[string][]posting
}

// field kinds, in the order of weights.
const (
	fName = iota
	fTitle
	fDesc
	fParamName
	fParamDesc
	nFields
)

var weights = [nFields]float64{WeightName, WeightTitle, WeightDescription, WeightParamName, WeightParamDescription}

// New builds the index of docs. Documents with the same name are all
// indexed (the caller's catalogue has unique names).
func New(docs []Doc) *Index {
	type docTerms struct {
		counts map[string][nFields]int32
		lens   [nFields]int
	}
	all := make([]docTerms, len(docs))
	var total [nFields]float64
	for i, d := range docs {
		dt := &all[i]
		dt.counts = map[string][nFields]int32{}
		add := func(f int, text string) {
			n := 0
			Terms(text, func(t string) bool {
				c := dt.counts[t]
				c[f]++
				dt.counts[t] = c
				dt.lens[f]++
				n++
				return n < MaxTermsPerField
			})
		}
		add(fName, d.Name)
		add(fTitle, d.Title)
		add(fDesc, d.Description)
		for j, p := range d.Params {
			if j == MaxParams {
				break
			}
			add(fParamName, p.Name)
			add(fParamDesc, p.Description)
		}
		for f := range nFields {
			total[f] += float64(dt.lens[f])
		}
	}
	var avg [nFields]float64
	for f := range nFields {
		avg[f] = 1
		if len(docs) > 0 && total[f] > 0 {
			avg[f] = total[f] / float64(len(docs))
		}
	}
	ix := &Index{names: make([]string, len(docs)), postings: map[string][]posting{}}
	for i, d := range docs {
		ix.names[i] = d.Name
		var norm [nFields]float64
		for f := range nFields {
			norm[f] = 1 - B + B*float64(all[i].lens[f])/avg[f]
		}
		// Each document appends at most one posting per term, in document
		// order, so postings (and scores) do not depend on map order.
		for t, c := range all[i].counts {
			tf := 0.0
			for f := range nFields {
				tf += weights[f] * float64(c[f]) / norm[f]
			}
			ix.postings[t] = append(ix.postings[t], posting{doc: int32(i), tf: float32(tf)})
		}
		all[i].counts = nil
	}
	return ix
}

// Len returns the number of documents of the index.
func (ix *Index) Len() int { return len(ix.names) }

// Search returns up to limit documents that contain at least one term of
// query, best first (ties by name), for which keep (nil: all) is true.
// limit 0 means DefaultLimit. Errors: ErrQueryTooLong, ErrEmptyQuery,
// ErrLimit (each wrapped with the offending value).
func (ix *Index) Search(query string, limit int, keep func(name string) bool) ([]Hit, error) {
	if len(query) > MaxQueryBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrQueryTooLong, len(query), MaxQueryBytes)
	}
	if limit < 0 || limit > MaxLimit {
		return nil, fmt.Errorf("%w: %d, use 1 to %d (0 for %d)", ErrLimit, limit, MaxLimit, DefaultLimit)
	}
	if limit == 0 {
		limit = DefaultLimit
	}
	var terms []string
	Terms(query, func(t string) bool {
		if !slices.Contains(terms, t) {
			terms = append(terms, t)
		}
		return len(terms) < MaxQueryTerms
	})
	if len(terms) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrEmptyQuery, query)
	}
	if ix == nil || len(ix.names) == 0 {
		return nil, nil
	}
	n := float64(len(ix.names))
	scores := map[int32]float64{}
	for _, t := range terms {
		ps := ix.postings[t]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			scores[p.doc] += idf * tf * (K1 + 1) / (K1 + tf)
		}
	}
	hits := make([]Hit, 0, len(scores))
	for d, s := range scores {
		name := ix.names[d]
		if keep != nil && !keep(name) {
			continue
		}
		hits = append(hits, Hit{Doc: int(d), Name: name, Score: s})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		case a.Name != b.Name:
			return strings.Compare(a.Name, b.Name)
		}
		return a.Doc - b.Doc
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// Terms calls yield with each term of text in order (see the package
// comment) until it returns false. Only the first MaxFieldBytes of text are
// read.
func Terms(text string, yield func(string) bool) {
	if len(text) > MaxFieldBytes {
		text = text[:MaxFieldBytes]
	}
	var buf, wholeBuf [maxTermBytes + utf8.UTFMax]byte
	word, whole := buf[:0], wholeBuf[:0]
	long, wholeLong := false, false // longer than maxTermBytes: skipped
	parts := 0                      // the camelCase parts of the current run
	emit := func(b []byte, long bool) bool {
		if len(b) == 0 || long || len(b) > maxTermBytes || stopWords[string(b)] { // no allocation for the lookup
			return true
		}
		st := stem(string(b))
		if alt, ok := synonyms[st]; ok {
			for _, a := range alt {
				if !yield(a) {
					return false
				}
			}
			return true
		}
		return yield(st)
	}
	// part ends a camelCase part; run ends a run of letters and digits,
	// which is also indexed whole when it had several parts ("GitHub" is
	// github, git and hub), so that a brand written both ways meets.
	part := func() bool {
		if len(word) > 0 || long {
			parts++
		}
		ok := emit(word, long)
		word, long = buf[:0], false
		return ok
	}
	run := func() bool {
		if !part() {
			return false
		}
		ok := parts < 2 || emit(whole, wholeLong)
		whole, wholeLong, parts = wholeBuf[:0], false, 0
		return ok
	}
	var prev rune
	for i, r := range text {
		if r == utf8.RuneError || (!unicode.IsLetter(r) && !unicode.IsDigit(r)) {
			if !run() {
				return
			}
			prev = 0
			continue
		}
		// camelCase: a lower→Upper change starts a word, and so does the
		// last capital of a run followed by a lower ("HTTPServer").
		if unicode.IsUpper(r) && prev != 0 {
			split := unicode.IsLower(prev) || unicode.IsDigit(prev)
			if !split && unicode.IsUpper(prev) {
				if next, _ := utf8.DecodeRuneInString(text[i+utf8.RuneLen(r):]); unicode.IsLower(next) {
					split = true
				}
			}
			if split && !part() {
				return
			}
		}
		lr := unicode.ToLower(r)
		if len(word) > maxTermBytes {
			long = true
		} else {
			word = utf8.AppendRune(word, lr)
		}
		if len(whole) > maxTermBytes {
			wholeLong = true
		} else {
			whole = utf8.AppendRune(whole, lr)
		}
		prev = r
	}
	run()
}

// stem is a light English stemmer: plural -s/-es/-ies, -ing, -ed and a
// final -e, so that the common forms of a word meet. It is not Porter's:
// it only needs to be the same on both sides of the index.
func stem(w string) string {
	if len(w) <= 3 || !isASCII(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	switch {
	case strings.HasSuffix(w, "ing") && len(w) > 5:
		w = undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ed") && len(w) > 4 && !strings.HasSuffix(w, "eed"):
		w = undouble(w[:len(w)-2])
	}
	if strings.HasSuffix(w, "e") && len(w) > 4 {
		w = w[:len(w)-1]
	}
	return w
}

// undouble drops the last letter of a doubled final consonant ("runn",
// "embedd"), but not of l, s, z ("install", "process").
func undouble(w string) string {
	n := len(w)
	if n >= 2 && w[n-1] == w[n-2] && !strings.ContainsRune("aeioulsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// stopWords are English words too common to tell tools apart.
var stopWords = map[string]bool{}

// synonymGroups are words of the common vocabulary of tools that mean the
// same: every word of a group is indexed and searched as the group's
// first word(s) (after stemming), on both sides. Kept small and generic:
// it is not tuned to one catalogue.
var synonymGroups = [][2]string{
	{"directory", "folder dir"},
	{"create", "make"},
	{"image", "picture photo img"},
	{"web", "internet online"},
	{"allow", "allowed permitted permission"},
	{"size", "big large"},
	{"tree", "hierarchy nested"},
	{"pull request", "pr prs"},
	{"javascript script", "javascript js"},
	{"run", "execute exec"},
	{"current", "now today"},
	{"delete", "remove erase"},
	{"message", "msg"},
	{"repository", "repo"},
	{"database", "db"},
	{"kubernetes", "k8s"},
	{"documentation", "doc docs"},
}

// synonyms maps the stem of each word of synonymGroups to the stems of its
// group's first words.
var synonyms = map[string][]string{}

func init() {
	for _, g := range synonymGroups {
		var to []string
		for _, w := range strings.Fields(g[0]) {
			to = append(to, stem(w))
		}
		for _, w := range strings.Fields(g[0] + " " + g[1]) {
			if st := stem(w); !slices.Equal(synonyms[st], to) && (len(to) != 1 || st != to[0]) {
				synonyms[st] = to
			}
		}
	}
	for _, w := range strings.Fields(`a an and are as at be by can could do does for from has have how i if in into is it its
		me my of on or our should so some than that the their them then there these this those to up was we what when where which
		who will with would you your please want need using use via`) {
		stopWords[w] = true
	}
}
