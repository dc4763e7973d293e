package testutil

import (
	"os"
	"testing"
)

// NPMTestsEnv is the environment variable that turns on the tests that run
// npm packages: server-everything and the MCP Inspector through npx, the
// TypeScript SDK client of testdata/tsclient and the sandbox-runtime of
// testdata/srt (whose first run installs them with npm ci). They may reach
// the npm registry, so a plain `go test ./...` skips them; `make test` sets
// it to 1 after fetching the packages (targets tsclient and srt).
const NPMTestsEnv = "TOOLHOST_NPM_TESTS"

// NeedNPM skips tb unless NPMTestsEnv is "1", with a message naming the
// variable and `make test`. Every test that runs an npm package calls it
// (NeedNpx, TSClient and StartEverythingHTTP do), before anything that
// could start npm, npx or node.
func NeedNPM(tb testing.TB) {
	tb.Helper()
	if os.Getenv(NPMTestsEnv) != "1" {
		tb.Skip("runs npm packages, which may reach the npm registry: set " + NPMTestsEnv + "=1 to run it (make test does)")
	}
}
