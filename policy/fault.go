package policy

// fault selects a deliberately unsound variant of Decide. It is a
// test-only seam: only soundness_test.go sets testFault (setTestFault),
// to prove that the property test can fail. In production testFault is
// always faultNone; Translate never consults it.
type fault uint8

const (
	faultNone             fault = iota
	faultNoFailMask             // failing rules add nothing to the mask
	faultNoTTLMask              // dec_ttl does not mask the TTL
	faultNoInPortMask           // output and flood do not mask in_port
	faultFailBitsShort          // a failing field's proof stops above the differing bit
	faultNoPrereq               // a failing field's proof comes without its prerequisites
	faultNoPCPMask              // mod_vlan_vid (and normal, on a priority tag) keeps the PCP without masking it
	faultNoVLANMask             // normal does not mask the VLAN ID
	faultNoRestoreMask          // the tag restored after normal is not masked
	faultNoTableMask            // lookups in tables after the first add nothing to the mask
	faultNoMirrorMask           // mirrors add nothing to the mask (in_port)
	faultNoMirrorVLANMask       // mirrors that select VLANs do not mask the VLAN
	faultNoRecircMask           // decisions of rules with recirculation do not read recirc_id
	faultNoCTFailMask           // a rule failing on a conntrack field (ct_state, ct_zone, ct_mark) adds nothing to the mask
	faultSelectNoHashMask       // a select group does not mask the fields it hashes
	faultGroupProofShort        // a hashed group without a match proves it by one field too few
)

// testFault is the variant decide runs; see fault.
var testFault fault
