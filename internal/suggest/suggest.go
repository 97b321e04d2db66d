package suggest

import "strings"

// Closest returns the candidate nearest to s by edit distance, if it is close
// enough to be a plausible typo, else "".
func Closest(s string, candidates []string) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	limit := max(1, len(s)/3)
	if best == "" || bestDist > limit || bestDist >= len(s) {
		return ""
	}
	return best
}

// CloseMatches returns the candidates within typo distance of s, or
// containing it, in the order given.
func CloseMatches(s string, candidates []string) []string {
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

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent letters
// ("gti" → "git") each cost one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
