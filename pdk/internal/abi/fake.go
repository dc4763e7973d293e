//go:build !wasip1

package abi

import "sync"

// Fake is the in-process kernel used when the code is not built for wasip1
// (plain `go test` on the host). pdktest drives it.
var Fake = &FakeKernel{}

// LogRecord is one message sent through Log.
type LogRecord struct {
	Level int32
	Msg   string
}

// FakeKernel holds the state a real kernel would hold. All fields are guarded
// by its mutex; use the methods or lock it.
type FakeKernel struct {
	sync.Mutex
	In      []byte
	Out     []byte
	Err     string
	Conf    map[string]string
	Vars    map[string][]byte
	Logs    []LogRecord
	MinLog  int32
	HTTPFun func(request, body []byte) (status int32, header, respBody []byte)
	// ToolsFun answers ToolsCall (toolhost:host/tools call); nil: not granted.
	ToolsFun func(request []byte) []byte
}

// Input returns the current call's input.
func Input() []byte {
	Fake.Lock()
	defer Fake.Unlock()
	return append([]byte(nil), Fake.In...)
}

// SetOutput sets the call's output.
func SetOutput(b []byte) {
	Fake.Lock()
	defer Fake.Unlock()
	Fake.Out = append([]byte(nil), b...)
}

// SetError sets the call's error message.
func SetError(msg string) {
	Fake.Lock()
	defer Fake.Unlock()
	Fake.Err = msg
}

// Config returns the configuration value for key.
func Config(key string) (string, bool) {
	Fake.Lock()
	defer Fake.Unlock()
	v, ok := Fake.Conf[key]
	return v, ok
}

// VarGet returns the variable key.
func VarGet(key string) ([]byte, bool) {
	Fake.Lock()
	defer Fake.Unlock()
	v, ok := Fake.Vars[key]
	return v, ok
}

// VarSet sets or (nil value) deletes the variable key.
func VarSet(key string, value []byte) {
	Fake.Lock()
	defer Fake.Unlock()
	if value == nil {
		delete(Fake.Vars, key)
		return
	}
	if Fake.Vars == nil {
		Fake.Vars = map[string][]byte{}
	}
	Fake.Vars[key] = append([]byte(nil), value...)
}

// LogLevel returns the fake host's minimum level.
func LogLevel() int32 {
	Fake.Lock()
	defer Fake.Unlock()
	return Fake.MinLog
}

// Log records msg.
func Log(level int32, msg string) {
	Fake.Lock()
	defer Fake.Unlock()
	if level < Fake.MinLog {
		return
	}
	Fake.Logs = append(Fake.Logs, LogRecord{Level: level, Msg: msg})
}

// HTTP hands the request to Fake.HTTPFun. Without one it panics, as the real
// kernel traps on a request it cannot make; tests use no real network.
func HTTP(request, body []byte) (int32, []byte, []byte) {
	Fake.Lock()
	f := Fake.HTTPFun
	Fake.Unlock()
	if f == nil {
		panic("pdk fake kernel: HTTP request " + string(request) + " but no handler is installed (use pdktest.SetHTTP)")
	}
	return f(request, body)
}

// ToolsCall hands the request to Fake.ToolsFun. Without one it answers as a
// host that granted no tool calls.
func ToolsCall(request []byte) []byte {
	Fake.Lock()
	f := Fake.ToolsFun
	Fake.Unlock()
	if f == nil {
		return []byte(`{"error":{"code":"not_granted","message":"the host grants this plugin no tool calls"}}`)
	}
	return f(request)
}
