package userdp

import (
	"bytes"
	"testing"
)

func TestNetdevXDPSmoke(t *testing.T) {
	rx, tx := netdevPair(t, NetdevXDP)
	t.Logf("native %v vlan %v", rx.XDPNative(), rx.XDPVLANRestore())
	pkts := [][]byte{udpFrame64(1), udpFrame64(2)}
	if n, err := tx.WriteBatch(pkts); err != nil || n != 2 {
		t.Fatal(n, err)
	}
	got := readFrom(t, rx, 2, testSrcMAC)
	for i := range got {
		if !bytes.Equal(got[i], pkts[i]) {
			t.Errorf("%d: % x", i, got[i])
		}
	}
}
