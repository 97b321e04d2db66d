// Copied from github.com/yuin/gopher-lua v1.1.2, pm/pm.go: the errors, the
// match data, the VM and the API, changed to count the VM's steps and stop
// when a context is done (the changes are marked "luapm:").
//
// The MIT License (MIT)
//
// Copyright (c) 2015 Yusuke Inuzuka
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this software and associated documentation files (the "Software"), to deal
// in the Software without restriction, including without limitation the rights
// to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
// copies of the Software, and to permit persons to whom the Software is
// furnished to do so, subject to the following conditions:
//
// The above copyright notice and this permission notice shall be included in all
// copies or substantial portions of the Software.
//
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
// IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
// FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
// AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
// LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
// OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
// SOFTWARE.

package luapm

import (
	"context"
	"errors"
	"fmt"
)

const (
	EOS               = -1
	_UNKNOWN          = -2
	maxRecursionLevel = 1000000
)

// luapm: checkEvery is how many steps the VM runs between two looks at
// the context: a step is an instruction, or a byte that %b or a
// back-reference (%1-%9) scans. The VM runs some 10⁸ steps a second, so a
// done context is noticed within microseconds, at a cost too small to
// measure (BenchmarkFind).
const checkEvery = 1024

// ErrInterrupted is wrapped, together with the context's cause, by the
// error of a match that was stopped because its context was done
// (luapm).
var ErrInterrupted = errors.New("pattern matching interrupted")

/* Error {{{ */

type Error struct {
	Pos     int
	Message string
}

func newError(pos int, message string, args ...interface{}) *Error {
	if len(args) == 0 {
		return &Error{pos, message}
	}
	return &Error{pos, fmt.Sprintf(message, args...)}
}

func (e *Error) Error() string {
	switch e.Pos {
	case EOS:
		return fmt.Sprintf("%s at EOS", e.Message)
	case _UNKNOWN:
		return e.Message
	default:
		return fmt.Sprintf("%s at %d", e.Message, e.Pos)
	}
}

// luapm: interruption is the panic that unwinds the VM when its context
// is done.
type interruption struct{ cause error }

// luapm: recoverError turns the VM's and the parser's panics into err.
func recoverError(err *error) {
	if v := recover(); v != nil {
		switch e := v.(type) {
		case *Error:
			*err = e
		case interruption:
			*err = fmt.Errorf("%w: %w", ErrInterrupted, e.cause)
		default:
			panic(v)
		}
	}
}

/* }}} */

/* MatchData {{{ */

type MatchData struct {
	// captured positions
	// layout
	// xxxx xxxx xxxx xxx0 : caputured positions
	// xxxx xxxx xxxx xxx1 : position captured positions
	captures []uint32
}

func newMatchState() *MatchData { return &MatchData{[]uint32{}} }

func (st *MatchData) addPosCapture(s, pos int) {
	for s+1 >= len(st.captures) {
		st.captures = append(st.captures, 0)
	}
	st.captures[s] = (uint32(pos) << 1) | 1
	st.captures[s+1] = (uint32(pos) << 1) | 1
}

func (st *MatchData) setCapture(s, pos int) uint32 {
	for s >= len(st.captures) {
		st.captures = append(st.captures, 0)
	}
	v := st.captures[s]
	st.captures[s] = (uint32(pos) << 1)
	return v
}

func (st *MatchData) restoreCapture(s int, pos uint32) { st.captures[s] = pos }

func (st *MatchData) CaptureLength() int { return len(st.captures) }

func (st *MatchData) IsPosCapture(idx int) bool { return (st.captures[idx] & 1) == 1 }

func (st *MatchData) Capture(idx int) int { return int(st.captures[idx] >> 1) }

/* }}} */

/* VM {{{ */

// luapm: machine holds what recursiveVM took as arguments and passed down
// unchanged (the subject, the program, the match data), and the step
// counter.
type machine struct {
	src   string
	insts []inst
	m     *MatchData
	left  int // steps before the next look at ctx
	ctx   context.Context
	done  <-chan struct{} // ctx.Done(), nil for a context never done
}

// luapm: poll panics with an interruption if the context is done, and
// restarts the step count.
func (vm *machine) poll() {
	vm.left = checkEvery
	select {
	case <-vm.done:
		panic(interruption{context.Cause(vm.ctx)})
	default:
	}
}

// Simple recursive virtual machine based on the
// "Regular Expression Matching: the Virtual Machine Approach" (https://swtch.com/~rsc/regexp/regexp2.html)
//
// luapm: a method of machine, counting its steps.
func (vm *machine) run(pc, sp, recLevel int) (bool, int) {
	recLevel++
	if recLevel > maxRecursionLevel {
		panic(newError(_UNKNOWN, "pattern/input too complex"))
	}
	src, insts, m := vm.src, vm.insts, vm.m
redo:
	if vm.left--; vm.left < 0 { // luapm
		vm.poll()
	}
	inst := insts[pc]
	switch inst.OpCode {
	case opChar:
		if sp >= len(src) || !inst.Class.Matches(int(src[sp])) {
			return false, sp
		}
		pc++
		sp++
		goto redo
	case opMatch:
		return true, sp
	case opTailMatch:
		return sp >= len(src), sp
	case opJmp:
		pc = inst.Operand1
		goto redo
	case opSplit:
		if ok, nsp := vm.run(inst.Operand1, sp, recLevel); ok {
			return true, nsp
		}
		pc = inst.Operand2
		goto redo
	case opSave:
		s := m.setCapture(inst.Operand1, sp)
		if ok, nsp := vm.run(pc+1, sp, recLevel); ok {
			return true, nsp
		}
		m.restoreCapture(inst.Operand1, s)
		return false, sp
	case opPSave:
		m.addPosCapture(inst.Operand1, sp+1)
		pc++
		goto redo
	case opBrace:
		if sp >= len(src) || int(src[sp]) != inst.Operand1 {
			return false, sp
		}
		start := sp // luapm
		count := 1
		for sp = sp + 1; sp < len(src); sp++ {
			if int(src[sp]) == inst.Operand2 {
				count--
			}
			if count == 0 {
				pc++
				sp++
				vm.left -= sp - start // luapm
				goto redo
			}
			if int(src[sp]) == inst.Operand1 {
				count++
			}
		}
		vm.left -= sp - start // luapm
		return false, sp
	case opNumber:
		idx := inst.Operand1 * 2
		if idx >= m.CaptureLength()-1 {
			panic(newError(_UNKNOWN, "invalid capture index"))
		}
		capture := src[m.Capture(idx):m.Capture(idx+1)]
		vm.left -= len(capture) // luapm
		for i := 0; i < len(capture); i++ {
			if i+sp >= len(src) || capture[i] != src[i+sp] {
				return false, sp
			}
		}
		pc++
		sp += len(capture)
		goto redo
	}
	panic("should not reach here")
}

/* }}} */

/* API {{{ */

// Pattern is a compiled Lua pattern (luapm: pm compiled the pattern on
// every Find).
type Pattern struct {
	insts    []inst
	anchored bool // the pattern starts with "^"
}

// Compile parses and compiles pattern p.
func Compile(p string) (pat *Pattern, err error) {
	defer recoverError(&err)
	sp := parsePattern(newScanner([]byte(p)), true)
	return &Pattern{insts: compilePattern(sp), anchored: sp.MustHead}, nil
}

// Iter is pm.Find's search loop made resumable (luapm): each Next runs it
// up to the next match. gmatch and gsub use it to match lazily, and every
// Next can be given the context of the slice that calls it.
type Iter struct {
	vm       machine
	anchored bool
	sp       int // where the next attempt starts
	limit    int // stop after this many matches (pm's rule: checked for equality after each attempt)
	n        int // matches so far
	done     bool
}

// Iter returns an iterator over the matches of p in src, starting at byte
// offset and stopping after limit matches (a negative limit: no limit),
// exactly as pm.Find(p, src, offset, limit) would list them.
func (p *Pattern) Iter(src string, offset, limit int) *Iter {
	return &Iter{vm: machine{src: src, insts: p.insts, left: checkEvery}, anchored: p.anchored, sp: offset, limit: limit}
}

// Next returns the next match, or nil when there are no more. If ctx is
// done while it searches, Next returns an error wrapping [ErrInterrupted]
// and the context's cause; it can then be called again to search again
// from where that attempt started. Step counts carry over between calls,
// so many cheap matches are checked as often as one long one.
func (it *Iter) Next(ctx context.Context) (md *MatchData, err error) {
	it.vm.ctx, it.vm.done = ctx, ctx.Done()
	defer func() { it.vm.ctx, it.vm.done = nil, nil }()
	defer recoverError(&err)
	for !it.done && it.sp <= len(it.vm.src) {
		if it.vm.m == nil {
			it.vm.m = newMatchState()
		} else {
			it.vm.m.captures = it.vm.m.captures[:0] // a failed attempt's: reused
		}
		ok, nsp := it.vm.run(0, it.sp, 0)
		it.sp++
		if ok {
			if it.sp < nsp {
				it.sp = nsp
			}
			it.n++
		}
		if it.n == it.limit || it.anchored {
			it.done = true
		}
		if ok {
			md, it.vm.m = it.vm.m, nil
			return md, nil
		}
	}
	it.done = true
	return nil, nil
}

// Find is pm.Find with a context (luapm): the matches of pattern p in src
// from byte offset on, at most limit of them if limit is not negative.
func Find(ctx context.Context, p string, src string, offset, limit int) ([]*MatchData, error) {
	pat, err := Compile(p)
	if err != nil {
		return nil, err
	}
	it := pat.Iter(src, offset, limit)
	matches := []*MatchData{}
	for {
		md, err := it.Next(ctx)
		if err != nil {
			return nil, err
		}
		if md == nil {
			return matches, nil
		}
		matches = append(matches, md)
	}
}

/* }}} */
