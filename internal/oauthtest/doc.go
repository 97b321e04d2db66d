// Package oauthtest is a test fixture for logging in to remote MCP servers
// with OAuth 2.1: a real authorization server, a real MCP server that
// demands its tokens, and a stand-in for the browser in between. All of it
// listens on 127.0.0.1 only.
//
// # The flow it plays out
//
// A client (such as the go-sdk's auth.AuthorizationCodeHandler) meets it in
// this order:
//
//  1. An MCP request to the [ResourceServer] without a token is answered 401
//     with WWW-Authenticate: Bearer resource_metadata="…/.well-known/oauth-protected-resource/mcp".
//  2. That document (RFC 9728) names the resource (the MCP endpoint's URL),
//     the one authorization server it trusts (an issuer URL) and the scopes
//     to ask for.
//  3. The [AuthServer] serves its metadata (RFC 8414) at the well-known
//     paths derived from the issuer: see metadataPaths.
//  4. The client registers itself at /register (RFC 7591), unless it was
//     registered ahead of time with [AuthServer.RegisterClient] or its
//     client_id is the URL of a client ID metadata document (see
//     [AuthServer.PublishClientMetadata]).
//  5. The client sends the user's browser to /authorize with a PKCE S256
//     challenge, a state, the scopes and the resource (RFC 8707). Consent is
//     automatic: the answer is a redirect to the client's redirect URI with
//     code, state and iss (RFC 9207). [Browse] and [BrowserScript] are the
//     browser; [Callback] is a loopback listener for the redirect.
//  6. The client redeems the code at /token with the PKCE verifier, and
//     gets an access token bound to the resource, and a refresh token if it
//     may refresh.
//  7. The retried MCP request carries the token; the resource server asks
//     the authorization server about it ([AuthServer.Verify]) and checks
//     that it was made for this resource.
//  8. A call of the admin tool with a token that lacks [ScopeAdmin] is
//     answered 403 with error="insufficient_scope" and the scopes it needs;
//     the client goes through 5 and 6 again for more scopes (step-up).
//  9. When the access token runs out the client trades the refresh token
//     for new ones (rotation: the old refresh token is retired, and using it
//     again revokes the whole grant).
//
// Every step can be made to go wrong from Go: see the Set methods of
// [AuthServer] and [ResourceServer], [AuthServer.Revoke],
// [AuthServer.ExpireAccessTokens], [AuthServer.ForgetClients], and the
// counts in [Stats] and [ResourceStats] for checking what a client did.
// [ResourceServerOptions].SSE serves the same over the legacy HTTP+SSE
// transport. [ResourceServerOptions].OpenHandshake answers the handshake
// without a token and challenges only what comes after (tools/list, a
// call), as servers that let anyone see who they are do;
// [ResourceServer.SetAuthServer] moves the server to another
// authorization server; [ResourceServer.Unversioned] lists the requests
// that came without the MCP-Protocol-Version header.
//
// # Why the authorization server is written here
//
// The Go authorization server libraries (ory/fosite, go-oauth2/oauth2) are
// made for production and are large; none does dynamic registration,
// resource indicators and the iss parameter together, and none would let a
// test hand out a wrong iss or expire tokens behind the client's back. A
// fixture also serves as documentation of the flow, which is easier to read
// in a few hundred lines that do only this. The client side is not written
// here: the tests use the go-sdk's own client and golang.org/x/oauth2.
//
// Tokens are opaque random strings looked up in memory, as with token
// introspection; nothing is signed.
//
// # What the go-sdk client (v1.8.0) expects
//
//   - Metadata must be served as Content-Type application/json, and an
//     authorization server's must list code_challenge_methods_supported, or
//     the client refuses it. Its issuer must equal the issuer URL up to a
//     trailing slash.
//   - The resource of the protected resource metadata must equal the URL
//     the client sent its MCP request to (the whole URL, query included), or
//     the document is skipped.
//   - It follows no redirect from a metadata URL into a loopback address,
//     so loopback metadata must be served where it is asked for.
//   - On 403 it steps up only if the challenge says
//     error="insufficient_scope"; auth.RequireBearerToken's own 403 does
//     not, which is why [ResourceServer] checks scopes itself.
//   - On 401 it always runs the whole login again; it never tries its
//     refresh token first. It refreshes only when golang.org/x/oauth2
//     finds the token expired, which is 10 seconds before expires_in runs
//     out: a shorter AccessTokenLifetime makes every request refresh,
//     including the one right after the code exchange, which fails the
//     login if no refresh token was issued.
//   - A refresh refused with invalid_grant is not an error: the request goes
//     out without a token, meets a 401, and the login starts over.
//   - It does not remember a dynamic registration: every login registers
//     again.
//   - mcp.Client.Connect first sends server/discover and, if that fails,
//     falls back to initialize; each meets the 401 on its own, so a login
//     that fails (wrong iss, consent refused) is tried twice, and the
//     browser opens twice.
//   - It asks for scopes in Go map order, different on every run; the
//     server sorts them.
//   - With a client ID metadata document it leaves the token endpoint's
//     auth style to golang.org/x/oauth2's auto-detection, which first tries
//     an HTTP Basic header with an empty secret (refused here: a public
//     client does not authenticate) and then the form.
//   - auth.RequireBearerToken's 401 challenge carries resource_metadata
//     only (no error="invalid_token"), and it refuses a TokenInfo without
//     an Expiration.
//
// # Concurrency
//
// Each server's handlers run on net/http's goroutines. An [AuthServer]
// keeps all its state under one mutex; the Go methods may be called from
// any goroutine while it serves. A [ResourceServer] guards only the
// authorization server it trusts and its counts. A [Callback]'s redirects
// queue in a channel and each Fetcher takes the oldest, so a redirect that
// arrives after its Fetcher gave up is taken by the next one, which then
// fails the client's state check.
package oauthtest
