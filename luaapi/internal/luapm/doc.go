// Copyright (c) 2015 Yusuke Inuzuka (gopher-lua's pm package, MIT licence:
// see LICENSE in this directory). Changes for mcpvisor are marked "luapm:".

// Package luapm is gopher-lua's Lua pattern matcher
// (github.com/yuin/gopher-lua/pm, v1.1.2) made interruptible.
//
// The matcher is a recursive backtracking VM: a pattern with several
// repetition items can take exponential time, and gopher-lua runs it in
// one Go call that ignores the LState's context, so a hook's slice budget
// could not stop it. Here the VM counts the instructions it executes (and
// the bytes %b and back-references scan) and every [checkEvery] of them
// looks at the context given to [Iter.Next] or [Find]; once the context is
// done the match is abandoned with an error wrapping [ErrInterrupted] and
// the context's cause.
//
// Everything else is as in pm, including its departures from PUC Lua 5.1
// (no %f, a "$" is an anchor only at the very end, a negative or zero
// limit, …), so that string.find/match/gmatch/gsub built on it give what
// gopher-lua's give. The subject is a string rather than a []byte, so
// callers need not copy a Lua string to match it.
//
// # Concurrency
//
// A [Pattern] is immutable once compiled and may be shared; an [Iter] and
// the [MatchData] it returns belong to one goroutine.
package luapm
