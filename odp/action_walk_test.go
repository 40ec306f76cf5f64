package odp

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

// everyActionType holds a zero value of every concrete Action type. The
// test below fails when the package defines one that is not listed, so
// that TestNestedActionsKnown sees every type.
var everyActionType = []Action{
	AddMPLS{}, CT{}, CTClear{}, CheckPktLen{}, Clone{}, DecTTL{}, Drop{}, Hash{}, LBOutput{},
	Meter{}, Output{}, PopEth{}, PopMPLS{}, PopNSH{}, PopVLAN{}, Psample{}, PushEth{}, PushMPLS{},
	PushNSH{}, PushVLAN{}, Recirc{}, Sample{}, Set{}, SetMasked{}, Trunc{}, TunnelPop{}, TunnelPush{},
	UnknownAction{}, Userspace{},
}

// TestEveryActionTypeListed reads the package's source for the types with
// an ActionType method and checks that everyActionType lists each.
func TestEveryActionTypeListed(t *testing.T) {
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, a := range everyActionType {
		listed[reflect.TypeOf(a).Name()] = true
	}
	found := 0
	for _, f := range pkgs["odp"].Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Name.Name != "ActionType" {
				continue
			}
			rt := fd.Recv.List[0].Type
			if st, ok := rt.(*ast.StarExpr); ok {
				rt = st.X
			}
			id, ok := rt.(*ast.Ident)
			if !ok {
				t.Fatalf("ActionType method on an unexpected receiver %T", rt)
			}
			found++
			if !listed[id.Name] {
				t.Errorf("action type %s is not in everyActionType: add it, so that the nested-action test sees it", id.Name)
			}
		}
	}
	if found != len(everyActionType) {
		t.Errorf("the source defines %d action types, everyActionType lists %d", found, len(everyActionType))
	}
}

var actionsType = reflect.TypeOf(Actions(nil))

// containsActions reports whether a value of type t can hold an action
// list (anywhere inside it).
func containsActions(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == actionsType {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if containsActions(t.Field(i).Type, seen) {
				return true
			}
		}
	case reflect.Slice, reflect.Array, reflect.Pointer, reflect.Map:
		if t.Kind() == reflect.Map && containsActions(t.Key(), seen) {
			return true
		}
		return containsActions(t.Elem(), seen)
	case reflect.Interface:
		return t == reflect.TypeOf((*Action)(nil)).Elem()
	}
	return false
}

// TestNestedActionsKnown: every action type that holds action lists is a
// NestedAction whose SubLists returns each of its lists, in field order,
// and whose MapSubLists replaces each; a type with no list is not one.
// Adding a nested action without telling the walker fails here.
func TestNestedActionsKnown(t *testing.T) {
	for _, a := range everyActionType {
		typ := reflect.TypeOf(a)
		var fields []int
		for i := 0; i < typ.NumField(); i++ {
			ft := typ.Field(i).Type
			if ft == actionsType {
				fields = append(fields, i)
			} else if containsActions(ft, map[reflect.Type]bool{}) {
				t.Errorf("%s.%s holds actions in a way the walker test cannot check: extend NestedAction and this test", typ.Name(), typ.Field(i).Name)
			}
		}
		n, isNested := a.(NestedAction)
		if len(fields) == 0 {
			if isNested {
				t.Errorf("%s has no action lists but is a NestedAction", typ.Name())
			}
			continue
		}
		if !isNested {
			t.Errorf("%s holds %d action lists but is not a NestedAction: WalkActions and MapNested would skip them", typ.Name(), len(fields))
			continue
		}
		// Give each list a distinct marker and read them back.
		v := reflect.New(typ).Elem()
		for j, i := range fields {
			v.Field(i).Set(reflect.ValueOf(Actions{Output{Port: uint32(j + 1)}}))
		}
		n = v.Interface().(NestedAction)
		lists := n.SubLists()
		if len(lists) != len(fields) {
			t.Errorf("%s: SubLists returns %d lists, the type has %d", typ.Name(), len(lists), len(fields))
			continue
		}
		for j, l := range lists {
			if len(l.Actions) != 1 || l.Actions[0] != (Output{Port: uint32(j + 1)}) {
				t.Errorf("%s: SubLists()[%d] (%q) = %v, want field %s", typ.Name(), j, l.Name, l.Actions, typ.Field(fields[j]).Name)
			}
		}
		m := reflect.ValueOf(n.MapSubLists(func(as Actions) Actions {
			return Actions{Output{Port: as[0].(Output).Port + 100}}
		}))
		for j, i := range fields {
			got := m.Field(i).Interface().(Actions)
			if len(got) != 1 || got[0] != (Output{Port: uint32(j + 101)}) {
				t.Errorf("%s: MapSubLists left %s as %v", typ.Name(), typ.Field(i).Name, got)
			}
		}
		if got := v.Field(fields[0]).Interface().(Actions); got[0] != (Output{Port: 1}) {
			t.Errorf("%s: MapSubLists modified its receiver", typ.Name())
		}
	}
}

func TestWalkActions(t *testing.T) {
	as, err := ParseActions("1,clone(2,sample(sample=50.0%,actions(3)),4),check_pkt_len(size=100,gt(5),le(dec_ttl(le_1(6)),7)),8")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	WalkActions(as, func(a Action, depth int) bool {
		got = append(got, strings.Repeat(">", depth)+FormatActions(Actions{a})[:1])
		return true
	})
	want := "1 c >2 >s >>3 >4 c >5 >d >>6 >7 8"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("walk order %q, want %q", g, want)
	}
	n := 0
	if WalkActions(as, func(a Action, _ int) bool { n++; return a != (Output{Port: 3}) }) || n != 5 {
		t.Errorf("stopping at output 3: walked %d actions (want 5), or reported a full walk", n)
	}
	if !WalkActions(nil, func(Action, int) bool { t.Error("called for an empty list"); return false }) {
		t.Error("an empty list is not walked fully")
	}
	if a := MapNested(Output{Port: 1}, func(Actions) Actions { t.Error("f called"); return nil }); a != (Output{Port: 1}) {
		t.Errorf("MapNested changed an action without lists: %v", a)
	}
}
