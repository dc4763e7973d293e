package pgtest

import (
	"database/sql"
	"errors"
	"os"
	"testing"
)

// TestServer: Start gives a server of the caller's; CreateDB refuses a name
// that is not a plain identifier, and gives a URL that connects; Stop
// removes the cluster's directory.
func TestServer(t *testing.T) {
	s, err := Start()
	if errors.Is(err, ErrNotInstalled) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			s.Stop()
		}
	}()
	for _, bad := range []string{"x; DROP DATABASE postgres", "Upper", "a-b", ""} {
		if _, err := s.CreateDB(bad); err == nil && bad != "" {
			t.Errorf("CreateDB(%q): no error", bad)
		}
	}
	url, err := s.CreateDB("scale_1")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	if err := db.QueryRow("SELECT current_database()").Scan(&name); err != nil || name != "scale_1" {
		t.Errorf("current_database() = %q, %v", name, err)
	}
	db.Close()
	s.Stop()
	stopped = true
	if _, err := os.Stat(s.s.dir); !os.IsNotExist(err) {
		t.Errorf("the cluster's directory %s is still there: %v", s.s.dir, err)
	}
}
