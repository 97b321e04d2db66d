package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpvisor/mcpvisor/internal/clientconf"
)

// movedPrefix starts the first line of every block connect --move appends
// to startup.lua.
const movedPrefix = "-- Moved from "

// alsoPrefix starts the line of a block that names the servers connect
// --move took out of the client's file although startup.lua declared them
// already.
const alsoPrefix = "-- Declared here already and taken out of it too: "

// movedMarker is the first line of the block connect --move appends to
// startup.lua for the client's file at path.
func movedMarker(c *clientconf.Client, path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return fmt.Sprintf("%s%s (%s) by mcpvisor connect --move.\n", movedPrefix, c.Name, path)
}

// movedBlocks finds the blocks that begin with marker in text: each runs
// from its marker line to the next blank line, the next block or the end,
// and takes the blank line connect put before it. It returns their byte
// ranges, in order.
func movedBlocks(text, marker string) [][2]int {
	var out [][2]int
	for from := 0; ; {
		i := strings.Index(text[from:], marker)
		if i < 0 {
			return out
		}
		start := from + i
		end := start + len(marker)
		if start > 0 && text[start-1] != '\n' { // not a line of its own
			from = end
			continue
		}
		for end < len(text) {
			line, next := text[end:], len(text)
			if nl := strings.IndexByte(line, '\n'); nl >= 0 {
				line, next = line[:nl], end+nl+1
			}
			if strings.TrimSpace(line) == "" || strings.HasPrefix(line, movedPrefix) {
				break
			}
			end = next
		}
		if start >= 2 && text[start-2:start] == "\n\n" {
			start--
		}
		out = append(out, [2]int{start, end})
		from = end
	}
}

// restorePlan is what disconnect --restore writes: the client's file with
// the moved servers back, and startup.lua without their blocks.
type restorePlan struct {
	startup             string
	luaBefore, luaAfter []byte
	client              []byte
	names               []string
}

// planRestore puts the servers that connect --move took out of the
// client's file at path back into data, each as the newest backup of that
// file holds it, and takes their blocks out of startup.lua. A server the
// client's file has again is left as it is there. It refuses, changing
// nothing, when a declaration in a block has no backup to come back from.
func (f *connectFlags) planRestore(path string, data []byte, out io.Writer) (restorePlan, error) {
	r := restorePlan{client: data}
	var err error
	if r.startup, err = f.startupPath(); err != nil {
		return r, err
	}
	if r.luaBefore, err = readIfExists(r.startup); err != nil {
		return r, err
	}
	text := string(r.luaBefore)
	blocks := movedBlocks(text, movedMarker(f.client, path))
	if len(blocks) == 0 {
		fmt.Fprintf(out, "%s has no servers that connect --move took from %s; nothing to restore.\n", r.startup, path)
		return r, nil
	}
	var moved, rest strings.Builder
	last := 0
	for _, b := range blocks {
		rest.WriteString(text[last:b[0]])
		moved.WriteString(text[b[0]:b[1]])
		last = b[1]
	}
	rest.WriteString(text[last:])

	backups, _ := filepath.Glob(path + ".bak-*")
	slices.Sort(backups)
	slices.Reverse(backups) // newest first: the names end in a timestamp
	declared := strings.Count(moved.String(), "\nmcp_add(")
	var also string // the names connect took out but did not declare again
	for _, line := range strings.Split(moved.String(), "\n") {
		if strings.HasPrefix(line, alsoPrefix) {
			also += line
		}
	}
	found, seen := 0, map[string]bool{}
	for _, backup := range backups {
		old, err := readIfExists(backup)
		if err != nil {
			return r, err
		}
		names, _, err := f.client.Servers(old)
		if err != nil {
			continue // not a copy this client's format can read
		}
		for _, name := range names {
			q := luaString(name)
			decl := strings.Contains(moved.String(), "\nmcp_add("+q+", ")
			if seen[name] || !(decl || strings.Contains(also, q)) {
				continue
			}
			seen[name] = true
			if decl {
				found++
			}
			v, _, err := f.client.Get(old, name)
			if err != nil {
				return r, fmt.Errorf("%s: %w", backup, err)
			}
			if _, there, err := f.client.Get(r.client, name); err != nil || there {
				if err != nil {
					return r, fmt.Errorf("%s: %w", path, err)
				}
				r.names = append(r.names, name) // back already: only its block goes
				continue
			}
			if r.client, err = f.client.Set(r.client, name, v); err != nil {
				return r, fmt.Errorf("%s: put %s back: %w", path, name, err)
			}
			r.names = append(r.names, name)
		}
	}
	if found < declared {
		return r, fmt.Errorf("%d of the %d servers moved from %s into %s are in none of its backups (%s.bak-*); put them back by hand",
			declared-found, declared, path, r.startup, path)
	}
	r.luaAfter = []byte(rest.String())
	return r, nil
}
