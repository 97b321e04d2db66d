package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServiceFiles(t *testing.T) {
	args := []string{"serve", "--http", "127.0.0.1:8931", "-c", "/home/u/my config/startup.lua"}
	unit, err := serviceFor("linux", "/home/u", "/home/u/.config", "/usr/local/bin/mcpvisor", args)
	require.NoError(t, err)
	assert.Equal(t, "/home/u/.config/systemd/user/mcpvisor.service", unit.path)
	assert.Contains(t, unit.content, "\nExecStart=/usr/local/bin/mcpvisor serve --http 127.0.0.1:8931 -c \"/home/u/my config/startup.lua\"\n")
	assert.Contains(t, unit.content, "Restart=on-failure")
	assert.Contains(t, unit.content, "WantedBy=default.target")

	agent, err := serviceFor("darwin", "/Users/u", "/Users/u/Library/Application Support", "/opt/bin/mcpvisor", args)
	require.NoError(t, err)
	assert.Equal(t, "/Users/u/Library/LaunchAgents/dev.mcpvisor.serve.plist", agent.path)
	var plist struct {
		Dict struct {
			Keys    []string `xml:"key"`
			Strings []string `xml:"string"`
			Array   []string `xml:"array>string"`
		} `xml:"dict"`
	}
	require.NoError(t, xml.Unmarshal([]byte(agent.content), &plist), "the agent is well-formed XML")
	assert.Equal(t, append([]string{"/opt/bin/mcpvisor"}, args...), plist.Dict.Array)
	assert.Equal(t, []string{"Label", "ProgramArguments", "RunAtLoad", "KeepAlive", "StandardErrorPath"}, plist.Dict.Keys)

	_, err = serviceFor("windows", "", "", "", args)
	require.ErrorContains(t, err, "connect")
}

func TestServiceInstallWritesTheUnit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the file written is this OS's; the shapes of the others are checked above")
	}
	home := tempHome(t)
	code, out, errOut := runCmd(t, "service", "install", "--yes")
	require.Equal(t, 0, code, errOut)
	path := filepath.Join(home, ".config", "systemd", "user", "mcpvisor.service")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(data), " serve --http 127.0.0.1:8931 -c "+filepath.Join(home, ".config", "mcpvisor", "startup.lua"))
	assert.Contains(t, out, "systemctl --user")
	code, out, _ = runCmd(t, "service", "install", "--yes")
	require.Equal(t, 0, code)
	assert.True(t, strings.Contains(out, "already up to date"))
	code, _, _ = runCmd(t, "service", "uninstall", "--yes")
	require.Equal(t, 0, code)
	assert.NoFileExists(t, path)
}
