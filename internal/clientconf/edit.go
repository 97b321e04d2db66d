package clientconf

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// Set adds the server name with the value v to the client's file data, or
// replaces it; everything else in data is kept as it was.
func (c *Client) Set(data []byte, name string, v map[string]any) ([]byte, error) {
	if c.Format == CodexTOML {
		return setTOML(data, name, v)
	}
	return setJSON(data, listKey(c.Format), name, v)
}

// Delete takes the server name out of the client's file data and reports
// whether it was there.
func (c *Client) Delete(data []byte, name string) ([]byte, bool, error) {
	if c.Format == CodexTOML {
		return deleteTOML(data, name)
	}
	return deleteJSON(data, listKey(c.Format), name)
}

// Get returns the server name of the client's file data as the client
// writes it (its own keys, not mcp_import's), ready for Set; ok is false
// when the file has no such server.
func (c *Client) Get(data []byte, name string) (v map[string]any, ok bool, err error) {
	if c.Format == CodexTOML {
		servers, err := codexServers(data)
		if err != nil {
			return nil, false, err
		}
		v, ok = servers[name].(map[string]any)
		return v, ok, nil
	}
	if strings.TrimSpace(string(data)) == "" {
		return nil, false, nil
	}
	if !json.Valid(data) {
		return nil, false, ErrNotJSON
	}
	old := gjson.GetBytes(data, escape(listKey(c.Format))+"."+escape(name))
	if !old.Exists() {
		return nil, false, nil
	}
	if err := json.Unmarshal([]byte(old.Raw), &v); err != nil {
		return nil, false, fmt.Errorf("%w: server %q is not an object", ErrNotJSON, name)
	}
	return v, true, nil
}

// Servers lists the servers in the client's file data, sorted by name, and
// returns them as a JSON document of the {"mcpServers": …} shape that
// mcp_import reads, whatever the client's own format.
func (c *Client) Servers(data []byte) (names []string, doc []byte, err error) {
	servers := map[string]any{}
	switch c.Format {
	case CodexTOML:
		raw, err := codexServers(data)
		if err != nil {
			return nil, nil, err
		}
		for name, v := range raw {
			t, ok := v.(map[string]any)
			if !ok {
				continue
			}
			servers[name] = fromCodex(t)
		}
	default:
		if strings.TrimSpace(string(data)) == "" {
			break
		}
		if !json.Valid(data) {
			return nil, nil, ErrNotJSON
		}
		list := gjson.GetBytes(data, listKey(c.Format))
		if list.Exists() && !list.IsObject() {
			return nil, nil, fmt.Errorf("%w: %q is not an object", ErrNotJSON, listKey(c.Format))
		}
		if err := json.Unmarshal([]byte(orEmpty(list.Raw)), &servers); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrNotJSON, err)
		}
	}
	for name := range servers {
		names = append(names, name)
	}
	slices.Sort(names)
	doc, err = json.Marshal(map[string]any{"mcpServers": servers})
	return names, doc, err
}

func orEmpty(raw string) string {
	if raw == "" {
		return "{}"
	}
	return raw
}

// fromCodex maps a Codex server table to the keys mcp_import knows:
// command, args, env, cwd and url carry over; http_headers become headers
// and bearer_token_env_var an Authorization header read from that
// variable; enabled = false becomes disabled. Codex's own settings (time
// outs, tool filters) have no counterpart and are left out.
func fromCodex(t map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"command", "args", "env", "cwd", "url"} {
		if v, ok := t[k]; ok {
			out[k] = v
		}
	}
	headers := map[string]any{}
	if h, ok := t["http_headers"].(map[string]any); ok {
		for k, v := range h {
			headers[k] = v
		}
	}
	if env, ok := t["bearer_token_env_var"].(string); ok && env != "" {
		headers["Authorization"] = "Bearer ${" + env + "}"
	}
	if len(headers) > 0 {
		out["headers"] = headers
	}
	if enabled, ok := t["enabled"].(bool); ok && !enabled {
		out["disabled"] = true
	}
	return out
}
