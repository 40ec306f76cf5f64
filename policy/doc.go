// Package policy is the decision engine of the upcall daemon: given a
// missed packet's flow key it decides the actions and the megaflow mask,
// and turns the decision into datapath actions.
//
// # Rules
//
// ParseRules reads a subset of the ovs-ofctl flow syntax, one rule per
// line, "#" comments and blank lines allowed:
//
//	table=0,priority=100,tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=dec_ttl,output:2
//
// table=N (0-254, default 0), priority=N (0-65535, default 32768) and
// the match fields are separated by commas or blanks; actions= comes last
// and takes the rest of the line. Numbers are decimal or 0x-prefixed
// hexadecimal.
//
// Match fields: in_port=N or in_port=NAME (a port name: it starts with a
// letter); dl_src, dl_dst=MAC[/MASK]; dl_type=N;
// dl_vlan=VID (0-4095; 0xffff matches packets without a tag);
// nw_src, nw_dst=IP[/LEN|/MASK] (IPv4, or ARP's addresses with arp);
// arp_spa, arp_tpa (same, ARP only); nw_proto=N (the ARP opcode with
// arp); nw_tos=N (the DSCP bits: a multiple of 4); nw_ttl=N;
// tp_src, tp_dst=N[/MASK]; icmp_type, icmp_code=N;
// ipv6_src, ipv6_dst=IP6[/LEN|/MASK]; ct_state=FLAGS (see Stateful
// rules); ct_zone=N (0-65535); ct_mark=V[/M] (32 bits). Shorthands: ip,
// ipv6, arp, tcp, udp, icmp, tcp6, udp6, icmp6.
//
// Prerequisites are enforced as Open vSwitch does for OpenFlow: nw_src
// and nw_dst need ip or arp; arp_* need arp; ipv6_* need ipv6; nw_proto
// needs ip, ipv6 or arp; nw_tos and nw_ttl need ip or ipv6; tp_* need
// tcp or udp (IPv4 or IPv6); icmp_* need icmp or icmp6. SCTP and the
// other OpenFlow fields are outside the subset. A field given twice with
// conflicting values ("tcp,udp") is an error.
//
// Actions: output:N and bare N (datapath port numbers), output:NAME (a
// port name); normal (the learning switch, VLAN-aware: see VLANs); flood
// and all (every port but the input port: there are no no-flood ports,
// so they are the same); drop (alone); resubmit(,N) (look the packet, as
// modified so far, up in table N, run that rule's actions, then go on);
// goto_table:N (the last action: go on in table N, a later table);
// mod_vlan_vid:N; mod_vlan_pcp:N (0-7: on a packet without a tag, a tag
// with VID 0 is pushed); strip_vlan (or pop_vlan); push_vlan:TPID
// (0x8100 or 0x88a8: a new outer tag with VID 0 and PCP 0, as Open
// vSwitch pushes it); mod_dl_src:MAC; mod_dl_dst:MAC;
// mod_nw_src:IP; mod_nw_dst:IP; mod_nw_tos:N; mod_nw_ttl:N; dec_ttl;
// mod_tp_src:N; mod_tp_dst:N; controller, or controller(userdata=HEX)
// with 1-256 bytes of hex (dots between bytes allowed) passed back in the
// userspace upcall; set_field:VALUE->FIELD for the fields a rule can
// set: eth_src and eth_dst (dl_src, dl_dst), vlan_vid (dl_vlan: 0-4095,
// or with the OpenFlow tag-present bit 0x1000), vlan_pcp, ip_src and
// ip_dst (nw_src, nw_dst), ipv6_src and ipv6_dst, nw_tos, ip_dscp (0-63),
// nw_ttl, tp_src and tp_dst (tcp_src, udp_src, tcp_dst, udp_dst, which
// set the port of TCP and UDP alike): each is the mod_* action of the
// field, with its semantics (ipv6_* apply to IPv6 packets only), and
// prints as it. in_port, dl_type and nw_proto cannot be set, nor arp_*
// and icmp_* (the kernel datapath cannot rewrite them: no set(arp) or
// set(icmp) action). Actions run in order on the packet as modified so
// far. As in Open vSwitch, modifications apply only where the header
// exists (mod_nw_src to IPv4, mod_nw_tos/ttl and dec_ttl to IPv4 and
// IPv6, mod_tp_* to TCP and UDP that are not later fragments); output to
// the input port is skipped; dec_ttl on a TTL of 0 or 1 stops the actions
// there, in every table (the packet is dropped after any outputs already
// done).
//
// ct(ARGS) and ct_clear are the stateful actions (see Stateful rules);
// group:N runs group N (see Groups).
//
// Port names are resolved to numbers by (*RuleSet).Resolve, which the
// daemon calls when it loads the rules and whenever its ports change: a
// name that is no port (yet) makes in_port=NAME match nothing and
// output:NAME do nothing, and the daemon warns about it. The rules print
// with their names.
//
// Errors are *ParseError with file, line, column and what was expected,
// e.g. "rules.txt:3:17: expected an IPv4 address or CIDR after nw_src=".
// Reload keeps the old rules when the new file is bad. (*RuleSet).String
// prints canonical rules that parse back to an equal rule set.
//
// # Pipelines
//
// A decision starts in table 0. resubmit(,N) and goto_table:N look the
// packet up in table N as the actions before them left it (rewritten
// fields, the VLAN tag set or stripped), as Open vSwitch does; a table
// with no matching rule does nothing more. Resubmits nested deeper than
// 64, or more than 4096 in all (a loop), drop the packet, as in Open
// vSwitch. The megaflow mask is the union of what every table's lookup
// consulted (each lookup as described below, on the packet as modified:
// a field an action wrote is a constant and adds nothing, dl_vlan is read
// where the tag then comes from), and of what the actions read.
//
// # Stateful rules
//
// ct and ct_clear are Open vSwitch's actions (ovs-actions(7)), and
// ct_state, ct_zone and ct_mark its matches:
//
//	table=0,ip,actions=ct(table=1)
//	table=1,ct_state=+trk+new,ip,in_port=1,actions=ct(commit,table=2)
//	table=1,ct_state=+trk+est,ip,actions=resubmit(,2)
//	table=1,priority=0,actions=drop
//	table=2,actions=normal
//
// ct(ARGS) sends the packet through connection tracking; "ct" alone
// only tracks. ARGS, comma-separated, any order: commit (commit the
// connection); force (commit, deleting first an entry committed in the
// other direction: the datapath's force_commit); zone=N (0-65535,
// default 0); mark=V[/M] or exec(set_field:V[/M]->ct_mark) (set the
// connection mark's bits M to V; needs commit or force; M not 0); nat
// (apply the NAT of an existing connection); nat(src=RANGE[,FLAGS]) or
// nat(dst=RANGE[,FLAGS]) (source or destination NAT of a new connection;
// needs commit), RANGE being ADDR[-ADDR][:PORT[-PORT]] or :PORT[-PORT],
// IPv6 addresses in brackets ("[2001:db8::1]-[2001:db8::9]:80"), FLAGS
// random, hash (not both) and persistent; table=N (recirculate: see
// below). A rule with ct must match ip or ipv6 (as Open vSwitch
// requires; the datapath cannot track other packets), and a nat address
// must be of that family. ct_clear forgets the packet's conntrack state:
// later lookups see ct_state, ct_zone and ct_mark 0 (constants, which add
// nothing to the mask).
//
// Without table=, the ct action is done and the actions after it go on
// with the packet as it was, untracked: as in Open vSwitch, later lookups
// of the pass see ct_state, ct_zone and ct_mark 0 (constants: the ct
// fields are only seen after recirculation). With table=N, ct must be the last action of
// its rule, and it ends the packet's pass of the pipeline (the actions
// after a resubmit that led to it do not run): the datapath action is
// ct(...),recirc(ID), and the packet comes back from the datapath as a
// miss with recirc_id ID and the ct fields set by the tracker (ct_state
// with trk and new, est, rel, rpl, inv, snat, dnat as the tracker found
// it; ct_zone the zone; ct_mark), and its decision starts in table N
// ((*RuleSet).DecideAt). The modifications made before ct are emitted
// before it, so the tracker and the recirculated packet see them.
//
// ct_state=FLAGS is a sequence of +FLAG (set) and -FLAG (clear) for the
// flags new, est, rel, rpl, inv, trk, snat and dnat (each at most once),
// e.g. +trk+est-new, or a number VALUE[/MASK] (OVS_CS_F_* bits: new 0x01,
// est 0x02, rel 0x04, rpl 0x08, inv 0x10, trk 0x20, snat 0x40, dnat
// 0x80). The rules print it in bit order (ct_state=-new+est+trk).
//
// Recirculation IDs come from an Env.Recirc (upcalld's RecircTable): one
// ID per (ct action, table), the same for every flow that uses the same
// pair, never 0. The daemon counts the installed flows whose actions
// recirculate to each ID; an ID no flow has referred to for a whole
// revalidation pass is freed at the end of the next one (the grace pass
// lets a packet executed just before find its ID when it comes back),
// and the flows that match a freed recirc_id are deleted. A miss with a
// recirc_id the daemon does not know (freed, or from before a restart)
// is dropped and counted; a restarted daemon hands out IDs above those
// of the flows it adopts.
//
// Megaflows: when the rules have a ct(...,table=N), every decision reads
// recirc_id whole (it says which table the packet starts in; upcalld
// matches it exactly in every megaflow anyway, as Open vSwitch does).
// The ct_state, ct_zone and ct_mark matches are masked as any other
// field (a failing ct_state=+trk+est proves its failure with the bits
// down to the first that differs); ct reads the Ethernet type whole (the
// datapath needs an IP flow: a packet that reaches a ct through a
// resubmit and is not IP, or not of the nat address's family, is not
// tracked, and with table= its pass ends there, so it is dropped). So
// the megaflow of a packet's first pass holds what table 0 read, and
// that of each recirculated pass what its tables read, its recirc_id and
// the ct bits its rules consulted.
//
// # Groups
//
// A line that starts with group_id= defines a group, in ovs-ofctl's
// add-group syntax:
//
//	group_id=1,type=select,bucket=watch_port:2,actions=output:2,bucket=watch_port:3,actions=output:3
//	group_id=2,type=fast_failover,bucket=watch_port:eth1,actions=output:eth1,bucket=watch_port:eth2,actions=output:eth2
//	group_id=3,type=all,bucket=output:2,bucket=mod_nw_tos:8,output:3
//	ip,actions=group:1
//
// group_id=N (0-0xffffff00, each defined once), type=all, select or
// fast_failover, and one or more buckets: bucket=ACTIONS, or
// bucket=[weight:W,][watch_port:PORT,]actions=ACTIONS, a bucket's
// actions running to the next ",bucket=". Every action of the rules may
// be in a bucket but goto_table and ct(...,table=N); group:N of another
// group too, without loops. weight (0-65535, default 1) is a select
// bucket's share; watch_port (a number or a port name) makes the bucket
// live only while that port is up (Env.PortUp: upcalld reads the carrier
// of the port's interface at every revalidation pass and re-decides the
// flows when one changes); a bucket without watch_port is always live,
// and a fast_failover bucket must have one. A group:N of no group is an
// error with the place of the action.
//
// Each bucket runs on its own copy of the packet, as in Open vSwitch: the
// actions after the group, and the other buckets, see the packet as it
// was before the group (the modifications pending before the group are
// emitted first). A bucket whose datapath actions only output is emitted
// as it is; one that changes the packet is emitted inside clone(...).
// type=all runs every bucket; fast_failover the first live one; select
// one live bucket, chosen by a hash of the packet's 5-tuple (the
// Ethernet type; the IPv4 or IPv6 source, destination and protocol; the
// TCP, UDP or SCTP ports of a packet that has them; for a packet that is
// not IP, the Ethernet addresses) spread over the live buckets by their
// weights. No live bucket: the group does nothing.
//
// How select is translated: as a choice made here, with the hashed
// fields exact in the megaflow (Open vSwitch's selection_method=hash),
// not as the datapath's hash(l4(0)),recirc with a megaflow per dp_hash
// value (Open vSwitch's default dp_hash method). The two datapaths'
// dp_hash values differ (see odp.Hash: the kernel takes the packet's
// skb hash, whose seed is random per boot, the userspace datapath its
// own hash of the 5-tuple), so the same
// connection would take a different bucket on system@ and netdev@, and
// the cross-check could not compare them; here the same connection takes
// the same bucket on both, always, and its megaflow says which. The cost
// is a megaflow per connection (5-tuple) through a select group.
//
// Every bucket run counts as a resubmit towards the pipeline's bound
// (4096 in all: see Pipelines), so that groups of groups cannot multiply
// the work without limit; past it the packet is dropped.
//
// What a group masks: deciding runs every bucket (each on its own copy),
// so the mask holds what any bucket reads, whichever is live, and a
// select group also masks the fields it hashes; liveness and the weights
// are not in the key, so a change of liveness is a new policy (the daemon
// re-decides its flows), like the MAC table.
//
// # Decisions and megaflow masks
//
// (*RuleSet).Decide evaluates table 0's rules in priority order (ties:
// file order); no match drops. The mask accumulates every key bit consulted:
//
//   - A rule that matches contributes its whole match mask (with its
//     prerequisites, which are part of the match).
//   - A rule that fails is examined field by field in a fixed order
//     (in_port, ct_state, ct_zone, ct_mark, dl_type, nw_proto, dl_src, dl_dst, dl_vlan, nw_src,
//     nw_dst, ipv6_src, ipv6_dst, nw_tos, nw_ttl, tp_src, tp_dst): each
//     field that matches contributes its rule mask, and the first that
//     fails contributes only the bits that prove the failure, namely
//     the rule's mask bits from the field's top bit down to the first
//     bit where packet and rule differ. Fields after it are not
//     consulted. Soundness: a packet that agrees with this one on those
//     bits agrees on every consulted field that matched, and differs
//     from the rule on the differing bit, so it fails the same rule at
//     the same place; every rule before the matching one fails for it,
//     and the matching one matches, so it gets the same rule. For
//     nw_src=10.0.0.0/8 and a packet from 11.0.0.1 that is the 8 bits
//     (/8); for 192.168.0.1 only the first bit (/1).
//   - in_port, dl_type and nw_proto are always masked whole when
//     consulted: the kernel forces exact in_port and Ethernet type masks,
//     and L4 masks need an exact IP protocol. The fixed order puts them
//     before the fields that depend on them, so every L3/L4 bit in a mask
//     comes with an exact Ethernet type (and protocol).
//   - Consulting tp_src/tp_dst (or the ICMP type/code stored there) also
//     masks the fragment type whole: a later fragment has no L4 header
//     (its ports are zero in the key and absent from the kernel's), so a
//     megaflow from a later fragment must not match first fragments or
//     whole packets, and vice versa.
//   - Many rules with one mask (at least 16 in a table, e.g. a list of
//     exact 5-tuples) are looked up as a group, by hash, as Open
//     vSwitch's classifier looks up a subtable: one probe per group
//     finds its first matching rule, priorities and file order kept
//     across groups and single rules. A group with a match contributes
//     its mask; a group without one contributes the shortest prefix of
//     its fields (in the fixed order above) that no rule of the group
//     agrees with, with the prerequisites. That can be more bits than
//     the rule-by-rule proofs, never less than soundness needs (see
//     index.go).
//   - Actions add what they read: output, flood, all and normal read
//     in_port (output to the input port is skipped); normal reads dl_src
//     (so that every new source address misses and is learned) and
//     dl_dst; the mod_nw_* actions, dec_ttl and mod_tp_* read dl_type
//     (mod_tp_* also nw_proto and the fragment type); dec_ttl reads the
//     TTL bits above the lowest (enough to tell a TTL of 0 or 1) and,
//     when the packet goes on, the whole TTL (the new value is written
//     as a constant); mod_vlan_vid and strip_vlan read the tag-present
//     bit, mod_vlan_vid on a tagged packet the PCP and TPID it keeps.
//     After strip_vlan the key's inner tag is the outer one, so later
//     VLAN actions read the inner tag's bits (the key knows two tags:
//     after both are stripped the packet is taken to have none). A field
//     an earlier action overwrote is a constant and adds nothing.
//
// The mask never depends on the learning switch's state: normal always
// masks in_port, dl_src and dl_dst, and the VLAN bits described under
// VLANs. Which port normal picks is resolved
// by Translate from the switch; the switch's Learned, Moved and Expired
// events name the MAC address whose flows (Decision.Normal, with that
// dl_dst) the daemon must revalidate.
//
// # VLANs
//
// normal follows the ports' VLAN configuration (Env.VLANs, from
// upcalld's --port IFACE,vlan=N / trunks=LIST / vlan_mode=MODE,tag=N;
// ParsePortSpecs) with Open vSwitch's semantics, checked against its
// source (ofproto/ofproto-dpif-xlate.c and ofproto-dpif.c; the function
// each rule comes from in brackets). A port without configuration is a
// trunk of every VLAN. VID below is the outer tag's VLAN ID, 0 for an
// untagged or priority-tagged frame (xvlan_extract).
//
//   - Access port: VID 0 is accepted, any other VID dropped
//     [input_vid_is_valid]; the frame is in the port's VLAN, keeping the
//     PCP and TPID of a priority tag [xvlan_input_translate].
//   - Trunk: the frame is in VLAN VID (VLAN 0 when untagged) and is
//     dropped unless the port trunks it: with trunks=, an untagged frame
//     needs VLAN 0 listed [input_vid_is_valid, xbundle_trunks_vlan].
//   - Native port: VID 0 is the native VLAN, always accepted (keeping a
//     priority tag's PCP and TPID); another VID as on a trunk
//     [input_vid_is_valid, xvlan_input_translate]. A native port whose
//     VLAN is not 0 always trunks it and never trunks VLAN 0, whatever
//     trunks= says [bundle_set].
//   - The MAC table is keyed by (VLAN, MAC); normal sends to the port the
//     destination was learned on in the VLAN, else floods to every other
//     port that carries the VLAN: an access port its own, the others the
//     VLANs they trunk [xlate_normal, xlate_normal_flood,
//     xbundle_includes_vlan].
//   - Output: an access port, and a native-untagged port for its native
//     VLAN, strip the tag; trunks, native-tagged ports and
//     native-untagged ones for another VLAN tag the frame with its VLAN
//     [xvlan_output_translate]. The tag has the PCP and TPID of the
//     frame's tag, or PCP 0 and TPID 0x8100 for an untagged frame; a tag
//     whose VID and PCP are both 0 is left out, so VLAN 0 leaves a
//     trunk priority-tagged when its PCP is not 0 and untagged when it
//     is [xvlan_put, Port other_config:priority-tags=never, the
//     default].
//   - A tag left as it came keeps its DEI bit; a tag normal pushes has
//     DEI 0 (the datapaths fold DEI into the tag-present bit of the key
//     and clear it on push_vlan) [commit_vlan_action: pop and push].
//
// Not implemented: priority-tags=if-nonzero|always; dot1q-tunnel ports;
// xbundle_includes_vlan's rule that an access port does not get a frame
// with a second tag whose VID is not 0; and xlate_normal's drop of a
// frame whose tag is cut short (a VLAN TPID as Ethernet type, no tag),
// which normal takes as untagged (see normalVLAN: the drop would put the
// Ethernet type in every untagged megaflow and leave such frames with
// no flow).
//
// The outputs that keep the frame's tag as it is come first, so normal
// changes the tag as few times as it can; the actions after a normal see
// the frame's tag as it was before it.
//
// What normal masks: in_port, dl_src and dl_dst (as before), the
// tag-present bit, the VLAN ID of a tagged frame, the PCP and TPID of a
// priority-tagged one (it may be re-tagged or keep its tag), and when an action after a
// normal may emit, the whole outer tag of a tagged frame (normal may have
// removed it, and it is put back). None of this depends on the port
// configuration or the MAC table, which Translate reads: a change of
// either is a new policy (the daemon re-decides its flows).
//
// # Mirrors
//
// Env.Mirrors copy selected traffic to a port, with Open vSwitch's
// semantics (its Mirror table: select_src_port, select_dst_port,
// select_all, select_vlan, output_port); upcalld's --mirror SELECT:PORT
// configures them (ParseMirror: SELECT is IFACE for both directions,
// in=IFACE, out=IFACE, all, and vlan=N to narrow). A packet received on
// a selected port is copied first, tagged for the mirror's output port
// as normal would tag it (untagged to an access port, with its VLAN to a
// trunk), and not at all when its input port drops it for its VLAN
// [mirror_packet: input_vid_is_valid, output_normal]; one sent to a
// selected port is copied right after that output, as it went (Open
// vSwitch re-tags egress copies too; not implemented). Each mirror copies
// a packet once, never to its input port. normal neither learns on nor
// sends to a mirror's output port, and drops what arrives on it;
// explicit outputs still may. The megaflows carry the copies: decide
// with Env.DecideInto, which adds to the mask the input port, the outer
// tag's present bit and VID, and the whole outer tag when its VID is 0
// or the ports have VLAN configuration (the VLAN is the packet's VLAN on
// its input port).
//
// # Datapath actions
//
// Translate produces odp actions: modifications are collected and
// emitted just before the next output, userspace or VLAN action that is
// really emitted (not a skipped output to the input port), as one
// set_masked per header (eth, ipv4, ipv6, tcp or udp) whose mask is
// exactly the modified bits (mod_nw_tos masks 0xfc of the TOS); trailing
// modifications with no output after them are dropped. mod_vlan_vid on
// a tagged packet is pop_vlan then push_vlan; on an untagged one
// push_vlan with TPID 0x8100 and PCP 0. controller is a userspace action
// to Env.ControllerPID (with the userdata, if any, as its cookie): every
// packet the megaflow matches comes up to upcalld, which hands it and
// its key to the packet-in subscribers of its status socket (`dpctl
// monitor --packet-ins`) at most at --packet-in-rate a second (a token
// bucket of --packet-in-burst, as Open vSwitch's controller_rate_limit
// and controller_burst_limit), counting the rest in
// upcalld_packet_ins_dropped_total{reason}.
// ct is the datapath's ct action (zone only when not
// 0; commit alone, or force_commit for force), followed by recirc(ID)
// with table=N; ct_clear is ct_clear. group:N is the actions of the
// buckets it runs, each inside clone(...) when it changes the packet.
package policy
