package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
)

func TestGroupParseRoundTrip(t *testing.T) {
	text := `group_id=7,type=select,bucket=weight:2,actions=output:2,bucket=output:3
group_id=1,type=all,bucket=output:2,bucket=actions=mod_nw_tos:8,output:3
group_id=2,type=fast_failover,bucket=watch_port:2,actions=output:2,bucket=watch_port:veth3,actions=output:veth3
ip,actions=group:1
actions=group:2,group:7
`
	rs, err := ParseRules("g", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := `group_id=1,type=all,bucket=actions=output:2,bucket=actions=mod_nw_tos:8,output:3
group_id=2,type=fast_failover,bucket=watch_port:2,actions=output:2,bucket=watch_port:veth3,actions=output:veth3
group_id=7,type=select,bucket=weight:2,actions=output:2,bucket=actions=output:3
priority=32768,ip,actions=group:1
priority=32768,actions=group:2,group:7
`
	if got := rs.String(); got != want {
		t.Errorf("got:\n%swant:\n%s", got, want)
	}
	rs2, err := ParseRules("g2", strings.NewReader(rs.String()))
	if err != nil || !rs2.Equal(rs) {
		t.Errorf("does not parse back: %v", err)
	}
	if names := rs.PortNames(); len(names) != 1 || names[0] != "veth3" {
		t.Errorf("port names %v", names)
	}
	res, missing := rs.Resolve(map[string]uint32{"veth3": 3})
	if len(missing) != 0 || res.Group(2).Buckets[1].WatchPort != 3 || res.Group(2).Buckets[1].Actions[0].Port != 3 {
		t.Errorf("resolve: missing %v, group 2 %+v", missing, res.Group(2))
	}
}

func TestGroupParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"actions=group:5", "g:1:9: group:5: there is no group 5"},
		{"group_id=1,type=all,bucket=output:1\ngroup_id=1,type=all,bucket=output:2", "g:2:1: group 1 is defined twice"},
		{"group_id=1,type=all,bucket=group:2\ngroup_id=2,type=all,bucket=group:1", "refers to itself"},
		{"group_id=1,type=indirect,bucket=output:1", "expected a group type (all, select or fast_failover)"},
		{"group_id=1,type=all", "a group needs buckets"},
		{"type=all,bucket=output:1", "unknown field \"type\""},
		{"group_id=1,type=all,bucket=output:1,group_id=2", "unknown action"},
		{"group_id=1,bucket=output:1", "expected type="},
		{"group_id=1,type=fast_failover,bucket=output:1", "needs watch_port"},
		{"group_id=1,type=select,bucket=weight:x,actions=output:1", "expected a weight"},
		{"group_id=1,type=select,bucket=weight:1,output:1", "expected actions= in the bucket"},
		{"group_id=1,type=all,bucket=goto_table:3", "goto_table is not allowed in a bucket"},
		{"group_id=1,type=all,bucket=bogus", "g:1:28: unknown action"},
		{"actions=group:x", "expected a group number"},
		{"group_id=99999999999,type=all,bucket=output:1", "expected a group number"},
	} {
		_, err := ParseRules("g", strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestGroupTranslate(t *testing.T) {
	rs, err := ParseRules("g", strings.NewReader(`group_id=1,type=all,bucket=output:2,bucket=mod_nw_tos:8,output:3
group_id=2,type=fast_failover,bucket=watch_port:2,actions=output:2,bucket=watch_port:3,actions=output:3
group_id=3,type=select,bucket=watch_port:2,actions=output:2,bucket=watch_port:3,actions=output:3,bucket=weight:0,actions=output:4
table=0,tcp,tp_src=1,actions=group:1,mod_nw_ttl:9,4
table=0,tcp,tp_src=2,actions=group:2
table=0,tcp,tp_src=3,actions=group:3
`))
	if err != nil {
		t.Fatal(err)
	}
	k := ctKey()
	up := map[uint32]bool{2: true, 3: true}
	env := &Env{Ports: []uint32{1, 2, 3, 4}, PortUp: func(p uint32) bool { return up[p] }}
	try := func(tp uint16) (string, flowkeys.Key) {
		k.TpSrc = tp
		d := rs.Decide(&k)
		return Translate(&d, &k, env).String(), d.Mask
	}
	// all: each bucket on its own copy (the TOS rewrite in a clone), the
	// actions after the group on the packet as it was.
	if got, _ := try(1); got != "2,clone(set(ipv4(tos=0x8/0xfc)),3),set(ipv4(ttl=9)),4" {
		t.Errorf("all: %s", got)
	}
	// fast_failover: the first live bucket.
	if got, _ := try(2); got != "2" {
		t.Errorf("fast_failover: %s", got)
	}
	up[2] = false
	if got, _ := try(2); got != "3" {
		t.Errorf("fast_failover, 2 down: %s", got)
	}
	up[3] = false
	if got, _ := try(2); got != "drop" {
		t.Errorf("fast_failover, all down: %s", got)
	}
	up[2], up[3] = true, true
	// select: the 5-tuple is exact in the mask, whatever the liveness.
	got, mask := try(3)
	if got != "2" && got != "3" {
		t.Errorf("select: %s", got)
	}
	if mask.IPv4Src != [4]byte{255, 255, 255, 255} || mask.IPv4Dst != [4]byte{255, 255, 255, 255} || mask.IPProto != 0xff || mask.TpSrc != 0xffff || mask.TpDst != 0xffff || mask.IPFrag != 0xff {
		t.Errorf("select mask %+v", mask)
	}
	// Over many connections both live buckets are used, about equally,
	// and the weight-0 one never; one connection always gets one bucket.
	counts := map[string]int{}
	for dport := range uint16(1000) {
		k.TpSrc, k.TpDst = 3, dport
		d := rs.Decide(&k)
		a := Translate(&d, &k, env).String()
		counts[a]++
		if b := Translate(&d, &k, env).String(); b != a {
			t.Fatalf("select is not stable: %s then %s", a, b)
		}
	}
	if counts["4"] != 0 || counts["2"] < 400 || counts["3"] < 400 {
		t.Errorf("select spread %v", counts)
	}
	// A bucket whose port is down is not chosen.
	up[2] = false
	for dport := range uint16(100) {
		k.TpDst = dport
		d := rs.Decide(&k)
		if a := Translate(&d, &k, env).String(); a != "3" {
			t.Fatalf("select with port 2 down: %s", a)
		}
	}
}

// TestGroupFanOutBounded: groups of groups, each bucket of a group
// calling the next, would run 2^30 buckets; the pipeline's bound stops
// the walk (the packet is dropped) instead.
func TestGroupFanOutBounded(t *testing.T) {
	var text strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&text, "group_id=%d,type=all,bucket=group:%d,bucket=group:%d\n", i, i+1, i+1)
	}
	text.WriteString("group_id=31,type=all,bucket=output:2\nactions=group:1\n")
	rs, err := ParseRules("fan", strings.NewReader(text.String()))
	if err != nil {
		t.Fatal(err)
	}
	k := ctKey()
	done := make(chan string, 1)
	go func() {
		d := rs.Decide(&k)
		done <- Translate(&d, &k, &Env{}).String()
	}()
	select {
	case got := <-done:
		if got != "drop" {
			t.Errorf("actions %.80s..., want drop", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a group fan-out of 2^30 buckets did not stop within 10 s")
	}
}
