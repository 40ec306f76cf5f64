package app

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ovsdp/ovsdp/internal/buildinfo"
)

func TestVersion(t *testing.T) {
	want := "upcalld " + buildinfo.Get().String() + "\n"
	for _, flag := range []string{"--version", "-V"} {
		var out, errb bytes.Buffer
		if code := Main([]string{"upcalld", flag}, &out, &errb); code != 0 || out.String() != want || errb.Len() != 0 {
			t.Errorf("upcalld %s: exit %d, stdout %q, stderr %q; want %q", flag, code, out.String(), errb.String(), want)
		}
	}
}

// The registry upcalld serves has upcalld_build_info with the build's
// labels and the value 1.
func TestBuildInfoGauge(t *testing.T) {
	bi := buildinfo.Get()
	want := fmt.Sprintf(`# HELP upcalld_build_info Always 1; the labels are the running upcalld's version, commit and Go version.
# TYPE upcalld_build_info gauge
upcalld_build_info{commit=%q,goversion=%q,version=%q} 1
`, bi.Commit, bi.GoVersion, bi.Version)
	if err := testutil.GatherAndCompare(newRegistry(), strings.NewReader(want), "upcalld_build_info"); err != nil {
		t.Error(err)
	}
}
