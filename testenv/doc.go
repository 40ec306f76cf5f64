// Package testenv gives tests network namespaces, veth pairs, addresses,
// routes, raw frames and captures, all torn down by t.Cleanup so that a test
// failing halfway leaves nothing behind. Every object it creates is named
// ovsdp-<pid>-<n> (pid and n in base 36), and a sweeper deletes such
// objects whose process is gone (left by a crashed run).
//
// Kernel tests that need the openvswitch module run under the VM runner in
// testenv/vmrun (package testenv/vm); see testenv/README.md.
package testenv
