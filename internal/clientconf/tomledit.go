package clientconf

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// ErrNotTOML is returned for a Codex file that does not parse, or whose
// server entry is written in a shape the table edit cannot take out (an
// inline table): such a file is left for the person to edit.
var ErrNotTOML = errors.New("not a TOML file mcpvisor can edit")

// codexTable is the table that holds Codex's servers.
const codexTable = "mcp_servers"

// setTOML replaces Codex's [mcp_servers.NAME] table (and its sub-tables)
// with one made from v, appended at the end of the file.
func setTOML(data []byte, name string, v map[string]any) ([]byte, error) {
	data, _, err := deleteTOML(data, name)
	if err != nil {
		return nil, err
	}
	body, err := toml.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("write the %s entry: %w", name, err)
	}
	var b bytes.Buffer
	b.Write(data)
	if len(bytes.TrimSpace(data)) > 0 {
		if !bytes.HasSuffix(data, []byte("\n")) {
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[%s.%s]\n", codexTable, tomlKey(name))
	b.Write(body)
	out := b.Bytes()
	if err := checkTOML(out); err != nil {
		return nil, err
	}
	return out, nil
}

// deleteTOML takes the [mcp_servers.NAME] table and its sub-tables out,
// with the blank lines before it; it reports whether there was one.
func deleteTOML(data []byte, name string) ([]byte, bool, error) {
	if err := checkTOML(data); err != nil {
		return nil, false, err
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	var out [][]byte
	dropping, found, gap := false, false, false
	for _, line := range lines {
		if path, ok := tableHeader(line); ok {
			dropping = len(path) >= 2 && path[0] == codexTable && path[1] == name
			switch {
			case dropping:
				found, gap = true, true
				for len(out) > 0 && len(bytes.TrimSpace(out[len(out)-1])) == 0 {
					out = out[:len(out)-1]
				}
			case gap && len(out) > 0: // keep the next table apart from what precedes it
				out = append(out, []byte("\n"))
				gap = false
			}
		}
		if !dropping {
			out = append(out, line)
		}
	}
	result := bytes.Join(out, nil)
	if len(bytes.TrimSpace(result)) == 0 {
		result = nil
	}
	if servers, err := codexServers(result); err != nil {
		return nil, false, err
	} else if _, still := servers[name]; still {
		return nil, false, fmt.Errorf("%w: the server %q is not written as its own [%s.%s] table", ErrNotTOML, name, codexTable, tomlKey(name))
	}
	return result, found, nil
}

func checkTOML(data []byte) error {
	var v map[string]any
	if err := toml.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("%w: %v", ErrNotTOML, err)
	}
	return nil
}

// codexServers is the file's mcp_servers table, decoded.
func codexServers(data []byte) (map[string]any, error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotTOML, err)
	}
	servers, _ := doc[codexTable].(map[string]any)
	return servers, nil
}

// tableHeader reads a [a.b."c"] line into its key path.
func tableHeader(line []byte) ([]string, bool) {
	s := strings.TrimSpace(string(line))
	if !strings.HasPrefix(s, "[") || strings.HasPrefix(s, "[[") {
		return nil, false
	}
	end := strings.LastIndexByte(s, ']')
	if end < 0 {
		return nil, false
	}
	var path []string
	rest := s[1:end]
	for {
		rest = strings.TrimSpace(rest)
		var key string
		switch {
		case strings.HasPrefix(rest, `"`) || strings.HasPrefix(rest, `'`):
			q := rest[0]
			i := 1
			for i < len(rest) && rest[i] != q {
				if q == '"' && rest[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(rest) {
				return nil, false
			}
			key = rest[1:i]
			if q == '"' {
				if unq, err := unquoteBasic(rest[:i+1]); err == nil {
					key = unq
				}
			}
			rest = rest[i+1:]
		default:
			i := strings.IndexByte(rest, '.')
			if i < 0 {
				i = len(rest)
			}
			key = strings.TrimSpace(rest[:i])
			rest = rest[i:]
		}
		path = append(path, key)
		rest = strings.TrimSpace(rest)
		if rest == "" {
			return path, true
		}
		if rest[0] != '.' {
			return nil, false
		}
		rest = rest[1:]
	}
}

func unquoteBasic(s string) (string, error) {
	var v struct{ K string }
	if err := toml.Unmarshal([]byte("K = "+s), &v); err != nil {
		return "", err
	}
	return v.K, nil
}

// tomlKey is name as a TOML key: bare when it can be.
func tomlKey(name string) string {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Sprintf("%q", name)
		}
	}
	if name == "" {
		return `""`
	}
	return name
}
