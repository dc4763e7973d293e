package lazyre

import (
	"sync"
	"testing"
)

func TestLazy(t *testing.T) {
	r := New(`^(a+)b$`)
	if r.String() != `^(a+)b$` {
		t.Errorf("String = %q", r.String())
	}
	var wg sync.WaitGroup
	for range 8 { // the first uses race to compile it: one compilation, one result
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !r.MatchString("aab") || r.MatchString("b") {
				t.Error("MatchString")
			}
		}()
	}
	wg.Wait()
	if m := r.FindStringSubmatch("aab"); len(m) != 2 || m[1] != "aa" {
		t.Errorf("FindStringSubmatch = %q", m)
	}
	if s := New(`[^a-z]+`).ReplaceAllString("a-b c", "_"); s != "a_b_c" {
		t.Errorf("ReplaceAllString = %q", s)
	}
	if first, again := r.Regexp(), r.Regexp(); first != again {
		t.Error("compiled twice")
	}
}

func TestCompileAllNamesTheBadOne(t *testing.T) {
	New(`(unclosed`)
	bad := CompileAll()
	if len(bad) != 1 || bad[`(unclosed`] == nil {
		t.Fatalf("CompileAll = %v", bad)
	}
	defer func() {
		if recover() == nil {
			t.Error("the first use of a bad expression did not panic")
		}
	}()
	New(`[z-a]`).MatchString("x")
}
