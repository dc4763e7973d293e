package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/auditkey"
)

const auditUsage = `Usage: toolhost audit [--tool GLOB] [--client C] [--outcome O] [--backend B] [--op OP]
                     [--since D|TIME] [--until D|TIME] [--correlation ID] [--limit N] [--json]
       toolhost audit key | rotate-key

Without a subcommand: the audit trail in the store ([store] url, else the default SQLite
file; README, "Audit trail in the store"), newest first, at most --limit rows (100): a
table, or with --json each record as one JSON line. --tool is a glob (* and ?); --since
and --until take a duration back from now (15m, 36h, 7d) or a time (RFC 3339, or a date);
--op selects an operation (tools/call, prompts/get, resources/read, admin/restart, ...).

The audit log's args_hmac is the HMAC-SHA-256 of a call's canonical arguments under this
installation's audit key (README, "Audit log"); key_id names the key.

  key          show the key file and the key_id records written with it carry
  rotate-key   replace the key with a new random one; records written from now on carry
               the new key_id, older ones can no longer be checked against their arguments
               (the old key is not kept); a running toolhost serve keeps the old key until
               it is restarted
`

// auditCmd runs toolhost audit key|rotate-key on the key file of this
// installation (host.DefaultAuditKeyFile).
func (c *cli) auditCmd(args []string) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(c.stdout, auditUsage)
		return exitOK
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return c.auditQuery(args) // store.go
	}
	if len(args) != 1 || (args[0] != "key" && args[0] != "rotate-key") {
		return c.usageError("usage: toolhost audit [--tool GLOB] [--client C] [--outcome O] [--since D|TIME] [--correlation ID] [--limit N] [--json] | audit key | rotate-key")
	}
	path, err := host.DefaultAuditKeyFile()
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return exitUsage
	}
	if args[0] == "key" {
		key, err := auditkey.Load(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(c.stdout, "audit key: %s (none yet: created at the first audited call)\n", path)
			return exitOK
		case err != nil:
			fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
			return exitUsage
		}
		fmt.Fprintf(c.stdout, "audit key: %s\nkey_id: %s\n", path, auditkey.ID(key))
		return exitOK
	}
	oldID, newID, err := host.RotateAuditKey(path)
	if err != nil {
		fmt.Fprintf(c.stderr, "toolhost: %s\n", esc(err))
		return exitUsage
	}
	fmt.Fprintf(c.stdout, "audit key: %s\nkey_id: %s (was %s)\nRestart a running toolhost serve to use it.\n", path, newID, dash(oldID))
	return exitOK
}

// checkAuditKey prints, for toolhost check, the audit key file and its
// key_id; a key the host would refuse is a configuration error (exit
// status 2), as New would fail.
func (c *cli) checkAuditKey() int {
	path, err := host.DefaultAuditKeyFile()
	if err == nil {
		var key []byte
		switch key, err = auditkey.Load(path); {
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(c.stdout, "audit key: %s (created at the first audited call)\n", path)
			return exitOK
		case err == nil:
			fmt.Fprintf(c.stdout, "audit key: %s (key_id %s)\n", path, auditkey.ID(key))
			return exitOK
		}
	}
	fmt.Fprintf(c.stderr, "toolhost: the audit key cannot be used: %s\n", esc(err))
	return exitUsage
}
