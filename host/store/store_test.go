package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/store"
	"github.com/toolhost/toolhost/internal/pgtest"
)

func TestOpenSQLiteMigrates(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "toolhost.db")
	db, err := store.Open(ctx, "sqlite://"+path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != r.Latest || len(r.Pending) != 0 || r.Version < 1 {
		t.Fatalf("check after open: %+v", r)
	}
	if _, err := db.Now(ctx); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Again: nothing to apply.
	db, err = store.Open(ctx, "sqlite://"+path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := db.Migrate(ctx)
	if err != nil || len(ms) != 0 {
		t.Fatalf("second migrate: %v %v", ms, err)
	}
	db.Close()
}

func TestOpenMemory(t *testing.T) {
	db, err := store.Open(context.Background(), "sqlite::memory:", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.SQL().Exec("INSERT INTO rate_buckets (key, tokens, updated_us) VALUES (?, ?, ?)", "k", 1.0, 1); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.SQL().QueryRow("SELECT count(*) FROM rate_buckets").Scan(&n); err != nil || n != 1 {
		t.Fatalf("count %d %v (connections must share one in-memory database)", n, err)
	}
}

// TestMemoryConcurrentWriters: the in-memory store's connections share one
// database and lock each other out as a file's do; a writer that finds it
// locked waits (busy_timeout) instead of failing with "database is locked"
// (SQLITE_BUSY), which a grant revoked while the audit writer flushed once
// did under load.
func TestMemoryConcurrentWriters(t *testing.T) {
	db, err := store.Open(context.Background(), "sqlite::memory:", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const writers, each = 8, 40
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range each {
				tx, err := db.SQL().Begin()
				if err == nil {
					_, err = tx.Exec("INSERT INTO rate_buckets (key, tokens, updated_us) VALUES (?, ?, ?)", fmt.Sprintf("k%d-%d", w, i), 1.0, 1)
					if err == nil {
						err = tx.Commit()
					} else {
						tx.Rollback()
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := db.SQL().QueryRow("SELECT count(*) FROM rate_buckets").Scan(&n); err != nil || n != writers*each {
		t.Fatalf("count %d %v, want %d", n, err, writers*each)
	}
}

func TestOpenCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.db")
	if err := os.WriteFile(path, []byte("this is not an SQLite database, just some text that is long enough to read a header from................................................"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := store.Open(context.Background(), "sqlite://"+path, store.Options{})
	if !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
	if want := path; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name the file", err)
	}
}

// TestCheckFindsDamagedPage: a file whose header and schema are sound
// but with a damaged page further in opens (Open reads page 1 only, in a
// time that does not grow with the file), and Check's quick_check finds
// the damage.
func TestCheckFindsDamagedPage(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolhost.db")
	db, err := store.Open(ctx, "sqlite://"+path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(ctx, "CREATE TABLE filler (x TEXT)"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 400; i++ {
		if _, err := db.SQL().ExecContext(ctx, "INSERT INTO filler VALUES (?)", strings.Repeat(fmt.Sprint(i), 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Check(ctx); err != nil {
		t.Fatalf("check of a sound file: %v", err)
	}
	db.Close() // the last connection's close checkpoints the WAL into the file
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	if len(b) < 100*page {
		t.Fatalf("file of %d bytes: want the filler's pages", len(b))
	}
	off := len(b) - 20*page // one of filler's pages, written last
	for i := range page {
		b[off+i] = 0xA5
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(ctx, "sqlite://"+path, store.Options{NoMigrate: true})
	if err != nil {
		t.Fatalf("open with a damaged page far from the header: %v", err)
	}
	defer db.Close()
	if _, err := db.Check(ctx); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("check: %v, want ErrCorrupt naming %s", err, path)
	}
}

func TestOpenBadURL(t *testing.T) {
	for _, u := range []string{"mysql://x", "sqlite://relative.db", "", "postgres://u:secretpw@127.0.0.1:1/db"} {
		_, err := store.Open(context.Background(), u, store.Options{})
		if err == nil {
			t.Fatalf("%q: no error", u)
		}
		if strings.Contains(err.Error(), "secretpw") {
			t.Fatalf("%q: error shows the password: %v", u, err)
		}
	}
}

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestOpenPostgresMigratesOnce(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	// Three replicas starting together apply the migrations once.
	errs := make(chan error, 3)
	dbs := make(chan *store.DB, 3)
	for range 3 {
		go func() {
			db, err := store.Open(ctx, url, store.Options{})
			errs <- err
			dbs <- db
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		db := <-dbs
		defer db.Close()
	}
	db, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := db.Check(ctx)
	if err != nil || r.Version != r.Latest || !db.Shared() {
		t.Fatalf("check: %+v %v", r, err)
	}
	if _, err := db.Now(ctx); err != nil {
		t.Fatal(err)
	}
}
