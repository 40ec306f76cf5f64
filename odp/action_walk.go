package odp

// NestedAction is an action that holds action lists of its own: Sample,
// Clone, CheckPktLen and DecTTL. Code that must reach every action of a
// list, nested ones included, goes through WalkActions and MapNested (or
// this interface) instead of switching on those types, so that a nested
// action added later cannot be skipped silently.
type NestedAction interface {
	Action
	// SubLists returns the nested lists in wire order, with their names.
	SubLists() []SubList
	// MapSubLists returns a copy of the action with every nested list l
	// replaced by f(l), in wire order; the receiver is not modified.
	MapSubLists(f func(Actions) Actions) Action
}

// SubList is one nested action list of a NestedAction.
type SubList struct {
	// Name is the list's name in the action's text: "actions" (sample),
	// "gt" and "le" (check_pkt_len), "le_1" (dec_ttl); empty for clone's
	// one list, which its text does not name.
	Name    string
	Actions Actions
}

// WalkActions calls fn for every action of as in order, nested lists
// included: the actions of an action's nested lists come right after it
// (depth first), with depth counting the nesting (0 for as itself). It
// stops as soon as fn returns false, and reports whether it went through
// every action.
func WalkActions(as Actions, fn func(a Action, depth int) bool) bool {
	return walkActions(as, 0, fn)
}

func walkActions(as Actions, depth int, fn func(Action, int) bool) bool {
	for _, a := range as {
		if !fn(a, depth) {
			return false
		}
		if n, ok := a.(NestedAction); ok {
			for _, l := range n.SubLists() {
				if !walkActions(l.Actions, depth+1, fn) {
					return false
				}
			}
		}
	}
	return true
}

// MapNested returns a with every nested list l replaced by f(l) when a is
// a NestedAction, and a itself otherwise. f decides whether to recurse.
func MapNested(a Action, f func(Actions) Actions) Action {
	if n, ok := a.(NestedAction); ok {
		return n.MapSubLists(f)
	}
	return a
}
