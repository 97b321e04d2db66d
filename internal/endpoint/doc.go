// Package endpoint is the HTTP side of a connection to a remote MCP server
// (streamable HTTP or legacy SSE): the RoundTripper the go-sdk's client
// transports send through, and the host's shared connection pool.
//
// [NewClient] wraps the pool for one connection. It adds the server's
// headers to every request; it gives the SDK the endpoint without
// credentials or query, because the errors the SDK and net/http format
// quote the request URL and those errors reach logs, events and the REPL,
// and puts them back on the wire; it bounds the wait for response headers
// of requests that carry no deadline of their own; and it ends every
// request when the connection's context ends, including those the SDK
// starts on contexts of its own. [Ended] tells when the SDK has given a
// streamable HTTP session up.
package endpoint
