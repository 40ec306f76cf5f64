package userdp

import (
	"os"
	"strings"
	"testing"
)

// The BPF programs' declared license stays consistent with the
// repository's: MIT (LICENSE), dual-licensed with the GPL for the kernel.
func TestBPFLicenseMatchesLICENSE(t *testing.T) {
	b, err := os.ReadFile("../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "MIT License\n") {
		t.Fatalf("LICENSE is not the MIT license: %.40q", b)
	}
	if bpfLicense != "Dual MIT/GPL" {
		t.Errorf("the BPF programs declare %q; with an MIT LICENSE they declare \"Dual MIT/GPL\"", bpfLicense)
	}
}
