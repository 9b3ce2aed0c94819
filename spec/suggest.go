package spec

import (
	"fmt"
	"strings"
)

// closest returns the candidate nearest to word by edit distance, ignoring
// case, when it is near enough to be a likely typo: one edit per three
// characters of the word, at most three. Short words get no suggestion, so
// "db" is not taken for a typo of "b".
func closest(word string, candidates []string) (string, bool) {
	best, bestDist := "", -1
	for _, c := range candidates {
		d := distance(strings.ToLower(word), strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	return best, bestDist >= 0 && bestDist <= 3 && 3*bestDist <= len([]rune(word))
}

// suggestion is the tail of an "unknown field" message: a did-you-mean when
// one is close, else the list of fields that are allowed.
func suggestion(word string, candidates []string) string {
	if s := didYouMean(word, candidates); s != "" {
		return s
	}
	return "; known fields: " + strings.Join(candidates, ", ")
}

// didYouMean is `; did you mean "x"?` when a candidate is close, else "".
func didYouMean(word string, candidates []string) string {
	if c, ok := closest(word, candidates); ok {
		return fmt.Sprintf("; did you mean %q?", c)
	}
	return ""
}

// distance is the optimal string alignment distance between a and b, by
// runes: Levenshtein's insertions, deletions and substitutions, plus the
// swap of two neighbours, the most common typo ("lcoal").
func distance(a, b string) int {
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
