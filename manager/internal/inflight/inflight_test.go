package inflight

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// A drain that runs out abandons exactly the requests in flight then: each
// is cancelled and can tell it was abandoned; a request that starts later
// is not, until the server is closing, when every new one is abandoned as
// it starts.
func TestRequestsAbandon(t *testing.T) {
	var r Requests
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	a, b := r.Add(cancel1), r.Add(cancel2)
	r.End(b, cancel2)
	require.Error(t, ctx2.Err(), "End releases the request's context")

	r.Abandon(false)
	require.Error(t, ctx1.Err())
	require.True(t, r.Abandoned(a))
	require.False(t, r.Abandoned(b), "an ended request is not abandoned")

	ctx3, cancel3 := context.WithCancel(context.Background())
	c := r.Add(cancel3)
	require.NoError(t, ctx3.Err(), "a request after the drain runs")
	require.False(t, r.Abandoned(c))

	r.Abandon(true)
	require.True(t, r.Abandoned(c))
	ctx4, cancel4 := context.WithCancel(context.Background())
	d := r.Add(cancel4)
	require.Error(t, ctx4.Err(), "once closing, a new request is abandoned as it starts")
	require.True(t, r.Abandoned(d))
}

// What a server asks outside one request goes to the answerers of the
// requests in flight, the most recent first, but only when they are all
// one client's; then to the owner's answerer, which stays when its
// request ends.
func TestRequestsAnswerers(t *testing.T) {
	nop := func() {}
	clients := func(cs []ask.Candidate, withheld int) []string {
		out := []string{}
		for _, c := range cs {
			out = append(out, c.Client+"/"+c.By)
		}
		if withheld > 0 {
			out = append(out, fmt.Sprintf("%d left out", withheld))
		}
		return out
	}

	var r Requests
	ids := make([]uint64, 3)
	for i, by := range []string{"first", "second", "third"} {
		ids[i] = r.Add(nop)
		r.AnswerBy(ids[i], &ask.Candidate{By: by, Client: "a"}, false)
	}
	r.Add(nop) // no answerer
	r.End(ids[1], nop)
	require.Equal(t, []string{"1 left out"}, clients(r.Answerers(false)), "a shared session: a question cannot be shown to be a's")
	require.Equal(t, []string{"a/third", "a/first"}, clients(r.Answerers(true)), "trusted: the requests in flight are all a's")

	b := r.Add(nop)
	r.AnswerBy(b, &ask.Candidate{By: "other", Client: "b"}, false)
	require.Equal(t, []string{"2 left out"}, clients(r.Answerers(true)), "two clients' requests: a question cannot say whose it is")

	c := r.Add(nop)
	r.AnswerBy(c, &ask.Candidate{Answerer: sole{}, By: "alone", Client: "c"}, false)
	require.Equal(t, []string{"c/alone", "2 left out"}, clients(r.Answerers(false)), "the only client the host serves")

	var own Requests
	q := own.Add(nop)
	own.AnswerBy(q, &ask.Candidate{By: "call", Client: "a"}, true)
	require.Equal(t, []string{"a/call", "a/call"}, clients(own.Answerers(false)), "the request's, then the owner's")
	own.End(q, nop)
	require.Equal(t, []string{"a/call"}, clients(own.Answerers(false)), "the owner's answerer stays between its requests")
}

// sole is an answerer whose client is the only one the host serves.
type sole struct{ ask.Answerer }

func (sole) SoleClient() bool { return true }

func TestProgressRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p Progress[int]
		var a, b []int
		ta, doneA := p.Add(func(v int) { a = append(a, v) }, Grace)
		tb, doneB := p.Add(func(v int) { b = append(b, v) }, 0)
		require.NotEqual(t, ta, tb)
		p.Deliver(ta, 1)
		p.Deliver(tb, 2)
		p.Deliver(42, 3) // not a token of ours
		p.Deliver("mcpvisor-999", 4)
		doneA()
		time.Sleep(Grace - time.Millisecond)
		p.Deliver(ta, 5)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		p.Deliver(ta, 6)
		p.Deliver(tb, 7)
		doneB()
		p.Deliver(tb, 8) // no grace: removed at once
		require.Equal(t, []int{1, 5}, a)
		require.Equal(t, []int{2, 7}, b)
	})
}
