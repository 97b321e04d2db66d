// Package argschema validates the arguments of a tool call against the
// tool's inputSchema before the call is sent.
//
// [Compile] turns the schema a server published (as the go-sdk decoded it)
// into a [Schema] once per discovery; [Schema.Check] then runs on every call.
// Check first coerces the arguments toward the schema where a caller's
// representation differs only in form (an empty Lua table where an array is
// expected, an integral float where an integer is), then validates them with
// github.com/google/jsonschema-go. Every violation is reported with its JSON
// path, at the deepest level where it was found:
//
//	invalid arguments: $.b: required property is missing; $.a: must be integer, got string "two"
//
// Most tools declare a flat object of strings, numbers and booleans. For
// those, Check answers "valid" without allocating (the general validator
// allocates about 26 times per call); invalid arguments still go to the
// general validator for its messages. BenchmarkCheck/flat and
// BenchmarkCheck/general measure the difference.
//
// A Schema is immutable once compiled and safe for concurrent use.
package argschema
