package crosscheck

import (
	"fmt"
	"strings"
)

// Diff returns a unified diff of a and b (line by line) with three lines
// of context, headed by the names aName and bName, or "" when they are
// equal. Inputs of up to a few thousand lines are diffed exactly
// (longest common subsequence); beyond the common prefix and suffix of
// longer ones, the lines that only one side has (counted as multisets)
// are shown removed or added, and the lines both have as context.
func Diff(aName, a, bName, b string) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	ops := diffOps(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	const ctx = 3
	// Group ops into hunks.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-ctx, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			j := end
			for j < len(ops) && ops[j].kind == ' ' {
				j++
			}
			if j == len(ops) || j-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = j
		}
		aStart, bStart, aN, bN := ops[start].ai, ops[start].bi, 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				aN++
			}
			if o.kind != '-' {
				bN++
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", aStart+1, aN, bStart+1, bN)
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.line)
			out.WriteByte('\n')
		}
		i = end
	}
	return out.String()
}

type diffOp struct {
	kind   byte // ' ', '-', '+'
	line   string
	ai, bi int // line numbers (0-based) in a and b where the op stands
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// maxLCSCells bounds the LCS table (lines of a times lines of b); a
// variable so that tests can lower it.
var maxLCSCells = 16 << 20

func diffOps(a, b []string) []diffOp {
	var ops []diffOp
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		ops = append(ops, diffOp{' ', a[p], p, p})
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	am, bm := a[p:len(a)-s], b[p:len(b)-s]
	if len(am)*len(bm) <= maxLCSCells {
		ops = append(ops, lcsOps(am, bm, p)...)
	} else {
		ops = append(ops, multisetOps(am, bm, p)...)
	}
	for k := 0; k < s; k++ {
		ai, bi := len(a)-s+k, len(b)-s+k
		ops = append(ops, diffOp{' ', a[ai], ai, bi})
	}
	return ops
}

func lcsOps(a, b []string, base int) []diffOp {
	n, m := len(a), len(b)
	// l[i][j] = LCS length of a[i:], b[j:].
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i], base + i, base + j})
			i++
			j++
		case i < n && (j == m || l[i+1][j] >= l[i][j+1]):
			ops = append(ops, diffOp{'-', a[i], base + i, base + j})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j], base + i, base + j})
			j++
		}
	}
	return ops
}

// multisetOps diffs a and b as multisets of lines: a line of a that b
// has as many times is kept (in a's order), the others are removed or
// added.
func multisetOps(a, b []string, base int) []diffOp {
	inB := map[string]int{}
	for _, l := range b {
		inB[l]++
	}
	var ops []diffOp
	for i, l := range a {
		if inB[l] > 0 {
			inB[l]--
			ops = append(ops, diffOp{' ', l, base + i, base})
		} else {
			ops = append(ops, diffOp{'-', l, base + i, base})
		}
	}
	inA := map[string]int{}
	for _, l := range a {
		inA[l]++
	}
	for j, l := range b {
		if inA[l] > 0 {
			inA[l]--
			continue
		}
		ops = append(ops, diffOp{'+', l, base + len(a), base + j})
	}
	return ops
}
