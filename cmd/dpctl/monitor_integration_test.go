//go:build integration && linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/pcapgo"

	"github.com/ovsdp/ovsdp/testenv"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

// TestIntegrationMonitor runs dpctl monitor on a kernel datapath that no
// upcalld serves (dpctl registers its own upcall socket): two frames
// sent into a port from a namespace, which no flow matches, are printed
// as MISS lines with the port's name and written to a pcapng file that
// gopacket reads back.
func TestIntegrationMonitor(t *testing.T) {
	requireKernel(t)
	ns := testenv.NewNetns(t)
	// No IPv6 on the namespace's end of the veth (it is made with the
	// namespace's defaults): its duplicate address detection and MLD
	// reports would be upcalls too, before or between the test's frames.
	if err := ns.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0)
	}); err != nil {
		t.Fatalf("disabling IPv6 in %s: %v", ns, err)
	}
	v := testenv.NewVeth(t, nil, ns)
	dp := newDP(t, v.Name)
	// Taking the datapath's upcalls changes it: refused in read only mode.
	if _, errs, err := ours().run("", "--read-only", "monitor", "system@"+dp); err == nil || !strings.Contains(errs, "not in read only mode") {
		t.Errorf("--read-only monitor: %v %q", err, errs)
	}
	pcap := filepath.Join(t.TempDir(), "up.pcapng")
	cmd := exec.Command(os.Args[0], "monitor", "--count", "2", "--pcap", pcap, "system@"+dp)
	cmd.Env = append(os.Environ(), "DPCTL_TEST_MAIN=1")
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var all strings.Builder
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "monitoring system@") {
				ready <- sc.Text()
			}
		}
		done <- cmd.Wait()
		ready <- all.String()
	}()
	select {
	case s := <-ready:
		if !strings.Contains(s, "own upcall socket") {
			t.Fatalf("monitor: %s", s)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("monitor did not start within 30 s")
	}
	frame := []byte("\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" +
		"\x45\x00\x00\x1c\x00\x00\x00\x00\x40\x11\x66\xcf\x0a\x00\x00\x01\x0a\x00\x00\x02\x03\xe8\x00\x35\x00\x08\x00\x00" +
		"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	ns.SendFrame(t, v.PeerName, frame)
	ns.SendFrame(t, v.PeerName, frame)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("monitor: %v: %s", err, <-ready)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("monitor did not see 2 upcalls within 30 s; printed:\n%s", out.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), out.String())
	}
	for i, l := range lines {
		for _, want := range []string{"MISS upcall[" + string(rune('1'+i)) + "/yes]: ", "in_port(1)", "eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02)", "udp(src=1000,dst=53)", " port " + v.Name + "(1): UDP 10.0.0.1:1000 > 10.0.0.2:53, 60 bytes"} {
			if !strings.Contains(l, want) {
				t.Errorf("line %q lacks %q", l, want)
			}
		}
	}
	raw, err := os.ReadFile(pcap)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pcapgo.NewNgReader(bytes.NewReader(raw), pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; ; n++ {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			if n != 2 {
				t.Errorf("%d packets in the pcapng, want 2", n)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, frame) {
			t.Errorf("packet %d: %x, want %x", n, data, frame)
		}
		if intf, err := r.Interface(ci.InterfaceIndex); err != nil || intf.Name != v.Name {
			t.Errorf("packet %d: interface %+v %v", n, intf, err)
		}
	}
}

// TestIntegrationMonitorUpcalld runs dpctl monitor on a kernel datapath
// that upcalld serves: the upcalls come from upcalld's subscription
// (upcalld keeps its upcall sockets and still handles the misses).
func TestIntegrationMonitorUpcalld(t *testing.T) {
	requireKernel(t)
	bin, err := filepath.Abs(filepath.Join("..", "..", "bin", "upcalld"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run make build first (%v)", bin, err)
	}
	t.Setenv("OVSDP_RUNDIR", t.TempDir())
	ns := testenv.NewNetns(t)
	v := testenv.NewVeth(t, nil, ns)
	dp := newDP(t, v.Name)
	daemon := exec.Command(bin, "--datapath", "system@"+dp, "--handlers", "1")
	var dlog bytes.Buffer
	daemon.Stdout, daemon.Stderr = &dlog, &dlog
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.Process.Kill(); daemon.Wait() })
	// Wait for its status socket.
	sock := ctl.StatusSocket("system", dp)
	for deadline := time.Now().Add(60 * time.Second); ; {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("upcalld's status socket %s did not answer within 60 s:\n%s", sock, dlog.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Three upcalls: the namespace's own IPv6 traffic (MLD reports,
	// router solicitations) may miss first; the frames sent below keep
	// missing (a new source address each).
	cmd := exec.Command(os.Args[0], "monitor", "--count", "3", "system@"+dp)
	cmd.Env = append(os.Environ(), "DPCTL_TEST_MAIN=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	frame := []byte("\x02\x00\x00\x00\x00\x12\x02\x00\x00\x00\x00\x11\x08\x00" +
		"\x45\x00\x00\x1c\x00\x00\x00\x00\x40\x11\x66\xcf\x0a\x00\x00\x01\x0a\x00\x00\x02\x03\xe8\x00\x35\x00\x08\x00\x00" +
		"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	var werr error
wait:
	for deadline := time.Now().Add(60 * time.Second); ; {
		// Until monitor has subscribed, the frames' misses go unseen:
		// send until it prints one (new source addresses keep missing).
		frame[11]++
		ns.SendFrame(t, v.PeerName, frame)
		select {
		case werr = <-done:
			break wait
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("monitor saw no upcall within 60 s: %s\nupcalld:\n%s", errb.String(), dlog.String())
		}
	}
	if werr != nil {
		t.Fatalf("monitor: %v: %s", werr, errb.String())
	}
	if !strings.Contains(errb.String(), "upcalls from upcalld on ") {
		t.Errorf("monitor did not use upcalld's subscription: %s", errb.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	ours := false
	for _, l := range lines {
		if !strings.HasPrefix(l, "MISS upcall[") {
			t.Errorf("monitor printed %q, not an upcall line", l)
		}
		ours = ours || strings.Contains(l, " port "+v.Name+"(1): UDP 10.0.0.1:1000 > 10.0.0.2:53")
	}
	if len(lines) != 3 || !ours {
		t.Errorf("monitor printed %q: want 3 upcall lines, one of them the test's UDP frame", out.String())
	}
	// upcalld still owns the upcalls: it handled them.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var st struct {
		Handled uint64 `json:"upcalls_handled"`
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := json.NewDecoder(c).Decode(&st); err != nil || st.Handled == 0 {
		t.Errorf("upcalld status: handled %d, %v (want the misses handled by upcalld)", st.Handled, err)
	}
}
