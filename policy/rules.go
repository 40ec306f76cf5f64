package policy

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// DefaultPriority is a rule's priority when it gives none (as in
// ovs-ofctl).
const DefaultPriority = 32768

// MaxLineLen bounds a rule line.
const MaxLineLen = 64 << 10

// Rule is one parsed rule.
type Rule struct {
	// Table is the rule's table (table=N, 0-MaxTable): decisions start
	// in table 0; resubmit(,N) and goto_table:N go on in table N.
	Table int
	// Priority orders a table's rules: higher first; ties go by position
	// in the file.
	Priority int
	// Match selects the packets the rule applies to.
	Match Match
	// Actions run on a matching packet, in order; empty drops it.
	Actions []Action
	// Line is the rule's 1-based line in its file (0 when built by hand).
	Line int
	// InPortName is the port name of in_port=NAME (Match.Value.InPort is
	// then the port's number once RuleSet.Resolve found it, else NoPort).
	InPortName string

	// fieldOrder lists the fields the match uses, in consulting order.
	fieldOrder []fieldID
	// l4 is set when the match uses TpSrc or TpDst.
	l4  bool
	rng flowkeys.Range
}

// String formats the rule canonically:
// "priority=N[,MATCH],actions=ACTIONS".
func (r *Rule) String() string {
	var b strings.Builder
	if r.Table != 0 {
		fmt.Fprintf(&b, "table=%d,", r.Table)
	}
	fmt.Fprintf(&b, "priority=%d", r.Priority)
	m := r.Match
	if r.InPortName != "" {
		b.WriteString(",in_port=" + r.InPortName)
		m.Value.InPort, m.Mask.InPort = 0, 0
	}
	if m := m.String(); m != "" {
		b.WriteByte(',')
		b.WriteString(m)
	}
	b.WriteString(",actions=")
	b.WriteString(formatActions(r.Actions))
	return b.String()
}

// Equal reports whether two rules have the same priority, match and
// actions (Line is not compared).
func (r *Rule) Equal(o *Rule) bool {
	return r.Table == o.Table && r.Priority == o.Priority && r.Match == o.Match && r.InPortName == o.InPortName && slices.Equal(r.Actions, o.Actions)
}

// prepare computes the rule's evaluation helpers from its match.
func (r *Rule) prepare() {
	r.fieldOrder = r.fieldOrder[:0]
	for f := range fieldID(numFields) {
		if f == fNwFrag {
			continue
		}
		if m := get(&r.Match.Mask, f); !m.isZero(fields[f].size) {
			r.fieldOrder = append(r.fieldOrder, f)
			if fields[f].l4 {
				r.l4 = true
			}
		}
	}
	r.rng = r.Match.Mask.Range()
}

// RuleSet is an ordered, immutable set of rules: safe for concurrent use.
type RuleSet struct {
	// Name is the file name the rules came from.
	Name string
	// Rules are in evaluation order: by table, then priority
	// descending, then file order. Do not modify them.
	Rules []Rule

	// tables[t] is where table t's rules start in Rules (they end
	// where table t+1's start).
	tables [MaxTable + 2]int32
	// recirc is set when a rule has ct(...,table=N): decisions then read
	// recirc_id (it says which table a packet starts in).
	recirc bool
	// groups are the groups, by ID.
	groups []*Group
	// index is the hashed lookup of the tables that have a group of
	// rules large enough (index.go), by table; nil when none has.
	index []*tableIndex
}

// MaxTable is the highest table number (OpenFlow's tables 0-254).
const MaxTable = 254

// table returns the indexes in Rules of table t's rules.
func (rs *RuleSet) table(t int) (start, end int) {
	return int(rs.tables[t]), int(rs.tables[t+1])
}

// NewRuleSet builds a rule set from rules (sorted into evaluation order
// by priority, stable).
func NewRuleSet(name string, rules []Rule) *RuleSet {
	rs := &RuleSet{Name: name, Rules: slices.Clone(rules)}
	slices.SortStableFunc(rs.Rules, func(a, b Rule) int {
		if a.Table != b.Table {
			return a.Table - b.Table
		}
		return b.Priority - a.Priority
	})
	t := 0
	for i := range rs.Rules {
		r := &rs.Rules[i]
		r.fieldOrder = nil
		r.Actions = slices.Clip(r.Actions)
		r.prepare()
		for _, a := range r.Actions {
			if a.Type == ActCT && a.CT.HasTable {
				rs.recirc = true
			}
		}
		for t < r.Table {
			t++
			rs.tables[t] = int32(i)
		}
	}
	for t < MaxTable+1 {
		t++
		rs.tables[t] = int32(len(rs.Rules))
	}
	rs.buildIndex()
	return rs
}

// DefaultRules is the policy without a rules file: one rule,
// "priority=0,actions=normal", which makes every decision the L2
// learning switch's.
func DefaultRules() *RuleSet {
	return NewRuleSet("default", []Rule{{Priority: 0, Actions: []Action{{Type: ActNormal}}}})
}

// String formats the rules canonically, one per line in evaluation
// order; ParseRules of the result gives an equal rule set.
func (rs *RuleSet) String() string {
	var b strings.Builder
	for _, g := range rs.groups {
		b.WriteString(g.String())
		b.WriteByte('\n')
	}
	for i := range rs.Rules {
		b.WriteString(rs.Rules[i].String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Equal reports whether two rule sets have equal rules in the same order.
func (rs *RuleSet) Equal(o *RuleSet) bool {
	return slices.EqualFunc(rs.Rules, o.Rules, func(a, b Rule) bool { return a.Equal(&b) }) &&
		slices.EqualFunc(rs.groups, o.groups, func(a, b *Group) bool { return a.equal(b) })
}

// ParseRules reads rules in the ovs-ofctl flow syntax subset, one per
// line:
//
//	[priority=N,]MATCH...,actions=ACTION[,ACTION...]
//
// Fields and shorthands are separated by commas or blanks; "#" starts a
// comment that runs to the end of the line; blank lines are ignored.
// See the package documentation for the fields and actions. The first
// bad rule fails the whole file with a *ParseError naming name, the line
// and column, and what was expected.
func ParseRules(name string, r io.Reader) (*RuleSet, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLineLen)
	var rules []Rule
	var groups []*Group
	actPos := map[int][]int{} // rule index: its actions' offsets
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		if isGroupLine(text) {
			g, err := parseGroup(text)
			if err != nil {
				err.File, err.Line = name, line
				return nil, err
			}
			g.Line = line
			groups = append(groups, g)
			continue
		}
		rule, pos, err := parseRule(text)
		if err != nil {
			err.File, err.Line = name, line
			return nil, err
		}
		rule.Line = line
		actPos[len(rules)] = pos
		rules = append(rules, rule)
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			return nil, &ParseError{File: name, Line: line + 1, Col: 1, Msg: fmt.Sprintf("line longer than %d bytes", MaxLineLen)}
		}
		return nil, fmt.Errorf("policy: read %s: %w", name, err)
	}
	if err := checkGroups(name, rules, groups, actPos); err != nil {
		return nil, err
	}
	rs := NewRuleSet(name, rules)
	rs.setGroups(groups)
	return rs, nil
}

// parseRule parses one rule line (comment already removed); it also
// returns the offsets of the actions.
func parseRule(text string) (Rule, []int, *ParseError) {
	p := &lineParser{s: text}
	pm, err := p.parseFields(true)
	if err != nil {
		return Rule{}, nil, err.(*ParseError)
	}
	p.pos = pm.actionsPos
	p.table = pm.table
	as, err := p.parseActions()
	if err != nil {
		return Rule{}, nil, err.(*ParseError)
	}
	if err := p.checkCTRule(&pm.Match, as, p.actPos); err != nil {
		return Rule{}, nil, err.(*ParseError)
	}
	return Rule{Table: pm.table, Priority: pm.priority, Match: pm.Match, InPortName: pm.inPortName, Actions: as}, p.actPos, nil
}

// ParseRule parses a single rule in the syntax of ParseRules (without
// comments). Errors are *ParseError with Line 1 and an empty File.
func ParseRule(s string) (Rule, error) {
	r, _, err := parseRule(s)
	if err != nil {
		err.Line = 1
		return Rule{}, err
	}
	rs := NewRuleSet("", []Rule{r})
	return rs.Rules[0], nil
}

// Reload parses a new rule file. On success it returns the new rule set;
// if the file is bad it returns old, unchanged, with the error, so that
// a daemon keeps running on its previous rules.
func Reload(old *RuleSet, name string, r io.Reader) (*RuleSet, error) {
	rs, err := ParseRules(name, r)
	if err != nil {
		return old, fmt.Errorf("policy: keeping the previous rules: %w", err)
	}
	return rs, nil
}
