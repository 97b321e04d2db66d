package luaapi

import (
	"fmt"
	"path"
	"slices"

	lua "github.com/yuin/gopher-lua"
)

// NameBudget gives the gateway's clients that call themselves Client
// (path.Match against the name a client gives when it connects) tool and
// prompt names of at most Budget characters, as mcp_name_budget declares.
type NameBudget struct {
	Client string
	Budget int
}

// The budgets a client may be given: room for a shortened name (a few
// characters, "_" and a six-digit hash) at least, the longest name the
// protocol allows at most.
const (
	minNameBudget = 16
	maxNameBudget = 128
)

// nameBudgetDecl is one mcp_name_budget.
type nameBudgetDecl struct {
	client string
	budget int // 0 removes a rule declared at the REPL
	where  string
}

// mcp_name_budget(client, n) → true. The gateway's clients whose name
// (clientInfo.name, a path.Match pattern: "claude-code", "Claude*") matches
// get tool and prompt names of at most n characters on /mcp and the
// toolsets; the first matching declaration decides, a client none matches
// gets serve --name-budget. Rules declared at the REPL come before the
// config's. In the config file it takes effect once the whole file has
// run and goes with a reload that no longer declares it; elsewhere at
// once, and n = nil removes it.
func (r *Runtime) luaNameBudget(L *lua.LState) int {
	const fname = "mcp_name_budget"
	d := nameBudgetDecl{client: L.CheckString(1), where: declaredAt(L)}
	if _, err := path.Match(d.client, ""); err != nil {
		L.ArgError(1, fmt.Sprintf("bad client name pattern %q: %v", d.client, err))
	}
	t, inConfig := r.tasks[L]
	inConfig = inConfig && t.config != nil
	switch n := L.Get(2).(type) {
	case lua.LNumber:
		if float64(n) != float64(int(n)) || int(n) < minNameBudget || int(n) > maxNameBudget {
			L.ArgError(2, fmt.Sprintf("the budget must be a whole number of characters from %d to %d, got %v", minNameBudget, maxNameBudget, n))
		}
		d.budget = int(n)
	case *lua.LNilType:
		if inConfig {
			L.ArgError(2, "a number of characters expected (a config drops a rule by no longer declaring it)")
		}
	default:
		L.ArgError(2, "a number of characters expected, got "+L.Get(2).Type().String())
	}
	if inConfig {
		want := t.config
		if r.opts.Gateway == nil && !want.checking {
			L.RaiseError("%s", noGateway(fname))
		}
		for _, prev := range want.budgets {
			if prev.client == d.client {
				L.RaiseError("INVALID_CONFIG: mcp_name_budget(%q) is declared twice in %s (first at %s); declare each client once", d.client, want.file, prev.where)
			}
		}
		want.budgets = append(want.budgets, d)
		L.Push(lua.LTrue)
		return 1
	}
	if r.opts.Gateway == nil {
		L.RaiseError("%s", noGateway(fname))
	}
	i := slices.IndexFunc(r.budgets.repl, func(e nameBudgetDecl) bool { return e.client == d.client })
	switch {
	case d.budget == 0 && i >= 0:
		r.budgets.repl = slices.Delete(r.budgets.repl, i, i+1)
	case d.budget == 0:
	case i >= 0:
		r.budgets.repl[i] = d
	default:
		r.budgets.repl = append(r.budgets.repl, d)
	}
	r.pushBudgets()
	L.Push(lua.LTrue)
	return 1
}

// budgetRules are the mcp_name_budget rules in force. Owned by the loop.
type budgetRules struct {
	repl, config []nameBudgetDecl
}

// applyBudgets puts the config's rules in force, if they changed.
func (r *Runtime) applyBudgets(want *desired) {
	if r.opts.Gateway == nil || slices.EqualFunc(want.budgets, r.budgets.config, sameBudget) {
		return
	}
	r.budgets.config = want.budgets
	r.pushBudgets()
}

func sameBudget(a, b nameBudgetDecl) bool { return a.client == b.client && a.budget == b.budget }

// pushBudgets hands the rules in force to the gateway: the REPL's first.
func (r *Runtime) pushBudgets() {
	rules := make([]NameBudget, 0, len(r.budgets.repl)+len(r.budgets.config))
	for _, d := range slices.Concat(r.budgets.repl, r.budgets.config) {
		rules = append(rules, NameBudget{Client: d.client, Budget: d.budget})
	}
	r.opts.Gateway.SetNameBudgets(rules)
}
