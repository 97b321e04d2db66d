// Package config turns declarations as people write them into the
// manager's [manager.Spec].
//
// [DecodeSpec] takes one server's declaration as Lua or JSON decode it (a
// map of plain values: string, bool, float64 or int64, []any,
// map[string]any), converts every field to its Go type, expands ${VAR}
// from the environment, applies the defaults and runs the spec's own
// validation, so that one INVALID_CONFIG error lists every problem at once,
// each naming its field ("backoff.jitter: must be within 0..1, got 2"),
// with a did-you-mean for unknown fields. Decoding owns the shapes (a
// string where a list belongs, a duration without a unit); the ranges of
// values belong to [manager.Spec.Problems].
//
// [ParseImport] reads a Claude Desktop, Cursor or VS Code style mcpServers
// file into [Declaration]s that DecodeSpec understands.
package config
