package main

import "testing"

// add-dp --group: for netdev@ datapaths only, with a group that exists.
func TestAddDPGroupErrors(t *testing.T) {
	h := newHarness(t)
	h.mustFail("--group applies to netdev@ datapaths only", "", "add-dp", "--group", "users", "system@x")
	h.mustFail("--group applies to netdev@ datapaths only", "", "add-dp", "x", "--group", "users")
	h.mustFail(`group "no-such-group-x": no such group`, "", "add-dp", "netdev@x", "--group", "no-such-group-x")
}
