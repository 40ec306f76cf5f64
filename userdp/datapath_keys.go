package userdp

import (
	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// keyAttrs converts a packet key to the attributes the kernel puts in an
// upcall.
func keyAttrs(k *flowkeys.Key) odp.FlowKey { return odp.KeyFromFlowKeys(k) }
