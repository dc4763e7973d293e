package host_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/auditkey"
)

// auditLine returns the only record of the audit log at path.
func auditLine(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 1 {
		t.Fatalf("%d audit records, want 1:\n%s", n, data)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	return rec
}

// TestAuditHashHidesRedactedValues: a call with a redacted 4-digit
// argument; hashing all 10,000 candidates, with the other arguments known
// (they are in the record), must not reproduce the record's hash (issue
// 20, item 6). The key's holder can still check a candidate, and the key
// file is created private.
func TestAuditHashHidesRedactedValues(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "audit.jsonl")
	keyPath := filepath.Join(dir, "state", "audit.key")
	h, _ := policyHost(t, `
[host]
audit_log = "`+logPath+`"
audit_redact = ["^pin$"]

[plugins.echo]
path = "@ECHO@"
# The first call waits for the module's compilation: cold (a fresh
# machine) and under -race on a busy one it can pass 30s.
timeout = "5m"
`, &host.Options{AuditKeyFile: keyPath})
	if _, err := h.CallTool(context.Background(), "echo__echo", map[string]any{"text": "pay", "pin": "4271"}); err != nil {
		t.Fatal(err)
	}
	rec := auditLine(t, logPath)
	if args, _ := json.Marshal(rec["args"]); string(args) != `{"pin":"[REDACTED]","text":"pay"}` {
		t.Fatalf("args %s, want the pin redacted", args)
	}
	hash, _ := rec["args_hmac"].(string)
	if len(hash) != 64 || rec["key_id"] != h.AuditKeyID() || len(h.AuditKeyID()) != 16 {
		t.Fatalf("record %v: want a 64-hex args_hmac and key_id %q", rec, h.AuditKeyID())
	}
	candidate := func(pin string) []byte { return []byte(`{"pin":` + pin + `,"text":"pay"}`) }
	for i := range 10000 {
		// The canonical form of the arguments (keys sorted, no space),
		// the PIN as a string or a number.
		for _, pin := range []string{fmt.Sprintf(`"%04d"`, i), fmt.Sprint(i)} {
			sum := sha256.Sum256(candidate(pin))
			if hex.EncodeToString(sum[:]) == hash {
				t.Fatalf("the redacted pin is %s: the record's hash gives it away", pin)
			}
		}
	}

	// The key: 64 hex digits, 0600 in a 0700 directory; with it, the true
	// arguments reproduce the hash (records can be checked and correlated).
	for p, mode := range map[string]os.FileMode{keyPath: 0o600, filepath.Dir(keyPath): 0o700 | os.ModeDir} {
		if info, err := os.Lstat(p); err != nil || info.Mode() != mode {
			t.Errorf("%s: %v %v, want mode %v", p, info.Mode(), err, mode)
		}
	}
	key, err := auditkey.Load(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(candidate(`"4271"`))
	if hex.EncodeToString(mac.Sum(nil)) != hash || auditkey.ID(key) != h.AuditKeyID() {
		t.Errorf("the key file's key does not reproduce the record's args_hmac")
	}
}

// TestAuditKeyRotation: after RotateAuditKey (toolhost audit rotate-key), a
// new Host writes another key_id and another hash of the same arguments.
func TestAuditKeyRotation(t *testing.T) {
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "audit.key")
	record := func() (hash, id string) {
		logPath := filepath.Join(t.TempDir(), "audit.jsonl")
		h, _ := policyHost(t, `
[host]
audit_log = "`+logPath+`"

[servers.fx]
command = "@FIXTURE@"
`, &host.Options{AuditKeyFile: keyPath})
		if _, err := h.CallTool(context.Background(), "fx__echo", map[string]any{"text": "same"}); err != nil {
			t.Fatal(err)
		}
		h.Close()
		rec := auditLine(t, logPath)
		hash, _ = rec["args_hmac"].(string)
		id, _ = rec["key_id"].(string)
		return hash, id
	}
	hash1, id1 := record()
	if again, idAgain := record(); again != hash1 || idAgain != id1 {
		t.Fatalf("same key, same arguments: %s %s then %s %s", hash1, id1, again, idAgain)
	}
	oldID, newID, err := host.RotateAuditKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if oldID != id1 || newID == id1 || len(newID) != 16 {
		t.Fatalf("RotateAuditKey: old %q new %q, want old %q and a new one", oldID, newID, id1)
	}
	if hash2, id2 := record(); id2 != newID || hash2 == hash1 {
		t.Errorf("after rotation: key_id %s args_hmac %s, want key_id %s and another hash", id2, hash2, newID)
	}
}

// TestAuditKeyRefused: a key that another user could have read or written,
// or that is not a key, fails New with ErrAudit and says why.
func TestAuditKeyRefused(t *testing.T) {
	good := func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "k", "audit.key")
		if _, _, err := auditkey.Rotate(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T) string
		key     []byte
		want    error
		message string
	}{
		{"symlink", func(t *testing.T) string {
			target := good(t)
			p := filepath.Join(filepath.Dir(target), "link.key")
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			return p
		}, nil, auditkey.ErrInsecure, "is a symbolic link"},
		{"group readable", func(t *testing.T) string {
			p := good(t)
			if err := os.Chmod(p, 0o640); err != nil {
				t.Fatal(err)
			}
			return p
		}, nil, auditkey.ErrInsecure, "chmod 600"},
		{"directory writable by others", func(t *testing.T) string {
			p := good(t)
			if err := os.Chmod(filepath.Dir(p), 0o777); err != nil {
				t.Fatal(err)
			}
			return p
		}, nil, auditkey.ErrInsecure, "chmod 700"},
		{"not hex", func(t *testing.T) string {
			p := good(t)
			if err := os.WriteFile(p, []byte("not a key\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, nil, auditkey.ErrMalformed, "64 hex digits"},
		{"short Options.AuditKey", func(t *testing.T) string { return "" }, []byte("short"), nil, "at least 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parsePolicy(t, "[host]\naudit_log = \""+filepath.Join(t.TempDir(), "a.jsonl")+"\"\n")
			if err != nil {
				t.Fatal(err)
			}
			h, err := host.New(context.Background(), cfg, &host.Options{AuditKeyFile: tc.setup(t), AuditKey: tc.key})
			if err == nil {
				h.Close()
				t.Fatal("New accepted the key")
			}
			if !errors.Is(err, host.ErrAudit) || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("New: %v, want ErrAudit, %v, saying %q", err, tc.want, tc.message)
			}
		})
	}
}
