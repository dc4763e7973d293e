package serverlog

import (
	"io"
	"log"

	"github.com/hashicorp/go-hclog"
)

// Tee returns a logger that writes every record to both a and b, each
// filtering by its own level; its Named, With and ResetNamed loggers tee
// alike. Is* and GetLevel report the more verbose of the two (a caller
// that skips work below the level still feeds b). SetLevel sets a's level
// only: b's level is its own. StandardLogger and StandardWriter write to
// both.
func Tee(a, b hclog.Logger) hclog.Logger { return &tee{a, b} }

type tee struct{ a, b hclog.Logger }

var _ hclog.Logger = (*tee)(nil)

func (t *tee) Log(level hclog.Level, msg string, args ...any) {
	t.a.Log(level, msg, args...)
	t.b.Log(level, msg, args...)
}
func (t *tee) Trace(msg string, args ...any) { t.Log(hclog.Trace, msg, args...) }
func (t *tee) Debug(msg string, args ...any) { t.Log(hclog.Debug, msg, args...) }
func (t *tee) Info(msg string, args ...any)  { t.Log(hclog.Info, msg, args...) }
func (t *tee) Warn(msg string, args ...any)  { t.Log(hclog.Warn, msg, args...) }
func (t *tee) Error(msg string, args ...any) { t.Log(hclog.Error, msg, args...) }
func (t *tee) IsTrace() bool                 { return t.a.IsTrace() || t.b.IsTrace() }
func (t *tee) IsDebug() bool                 { return t.a.IsDebug() || t.b.IsDebug() }
func (t *tee) IsInfo() bool                  { return t.a.IsInfo() || t.b.IsInfo() }
func (t *tee) IsWarn() bool                  { return t.a.IsWarn() || t.b.IsWarn() }
func (t *tee) IsError() bool                 { return t.a.IsError() || t.b.IsError() }
func (t *tee) ImpliedArgs() []any            { return t.a.ImpliedArgs() }
func (t *tee) With(args ...any) hclog.Logger { return &tee{t.a.With(args...), t.b.With(args...)} }
func (t *tee) Name() string                  { return t.a.Name() }
func (t *tee) Named(name string) hclog.Logger {
	return &tee{t.a.Named(name), t.b.Named(name)}
}
func (t *tee) ResetNamed(name string) hclog.Logger {
	return &tee{t.a.ResetNamed(name), t.b.ResetNamed(name)}
}
func (t *tee) SetLevel(level hclog.Level) { t.a.SetLevel(level) }
func (t *tee) GetLevel() hclog.Level {
	la, lb := t.a.GetLevel(), t.b.GetLevel()
	switch {
	case la == hclog.Off || la == hclog.NoLevel:
		return lb
	case lb == hclog.Off || lb == hclog.NoLevel:
		return la
	}
	return min(la, lb)
}
func (t *tee) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(t.StandardWriter(opts), "", 0)
}
func (t *tee) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return io.MultiWriter(t.a.StandardWriter(opts), t.b.StandardWriter(opts))
}
