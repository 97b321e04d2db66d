package manager

import "strings"

// closest returns the candidate nearest to s by edit distance, if it is close
// enough to be a plausible typo, else "".
func closest(s string, candidates []string) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	limit := max(1, len(s)/3)
	if best == "" || bestDist > limit {
		return ""
	}
	return best
}

// closeMatches returns the candidates within typo distance of s, or
// containing it, in the order given.
func closeMatches(s string, candidates []string) []string {
	var out []string
	ls := strings.ToLower(s)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if editDistance(ls, lc) <= max(1, len(s)/3) || (len(ls) >= 3 && strings.Contains(lc, ls)) {
			out = append(out, c)
		}
	}
	return out
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
