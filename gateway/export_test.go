package gateway

// FastServed is how many calls g's fast path has answered.
func FastServed(g *Gateway) int64 { return g.fastServed.Load() }
