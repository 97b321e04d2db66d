package gateway

import "net/http"

// withHealth answers the health checks of a process supervisor or load
// balancer before next sees the request, without a token: GET /healthz is
// 200 while the process serves, GET /readyz is 200 once ready says so and
// 503 before. Neither says anything else (no server names, no counts), so
// they tell an outsider nothing a port scan would not.
func withHealth(next http.Handler, ready func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
		case "/readyz":
			if ready != nil && !ready() {
				http.Error(w, "starting", http.StatusServiceUnavailable)
				return
			}
		default:
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok\n"))
	})
}
