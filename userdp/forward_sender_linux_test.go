package userdp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// fwdSenderEnv, when set in the environment of this package's test
// binary, makes it BenchmarkForwardVeth's sender instead of running
// tests: "IFNAME,DST-MAC,SRC-MAC" (see runFwdSender).
const fwdSenderEnv = "OVSDP_FWD_SENDER"

// TestMain runs the tests, or the forwarding benchmark's sender process.
func TestMain(m *testing.M) { os.Exit(testsOrSender(m)) }

// testsOrSender runs the sender when fwdSenderEnv says so, else the
// tests, and returns the exit code.
func testsOrSender(m *testing.M) int {
	spec := os.Getenv(fwdSenderEnv)
	if spec == "" {
		return m.Run()
	}
	err := runFwdSender(spec, os.Stdin, os.Stdout)
	if err == nil {
		return 0
	}
	fmt.Fprintf(os.Stderr, "forwarding sender: %v\n", err)
	return 1
}

// runFwdSender sends fwdFrames to DST-MAC on IFNAME (in the calling
// thread's namespace) with sendmmsg, batches of 64, as fast as it can,
// until in is closed. It writes "ready" when it sends, then answers each
// line read from in with the number of frames the socket has accepted so
// far (ENOBUFS, the socket's queue full, counts the frames not taken as
// not sent). Another error while sending ends it with the error.
func runFwdSender(spec string, in io.Reader, out io.Writer) error {
	parts := strings.Split(spec, ",")
	if len(parts) != 3 {
		return fmt.Errorf("%s=%q: want IFNAME,DST-MAC,SRC-MAC", fwdSenderEnv, spec)
	}
	dst, err1 := net.ParseMAC(parts[1])
	src, err2 := net.ParseMAC(parts[2])
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("%s=%q: %w", fwdSenderEnv, spec, err)
	}
	tx, err := OpenNetdev(parts[0], NetdevOptions{Mode: NetdevMmsg})
	if err != nil {
		return err
	}
	defer tx.Close()
	// Untagged frames only: no egress VLAN program, whose cost would
	// add to every frame sent.
	if a, ok := tx.(*MmsgPort); ok {
		a.vlanTx.detach()
		a.vlanTx = nil
	}
	frames := fwdFrames(dst, src)
	var sent atomic.Uint64
	var stop atomic.Bool
	done := make(chan error, 1)
	go func() {
		for !stop.Load() {
			n, err := tx.WriteBatch(frames)
			sent.Add(uint64(n))
			if err != nil && !errors.Is(err, unix.ENOBUFS) {
				done <- fmt.Errorf("sending on %s: %w", parts[0], err)
				return
			}
		}
		done <- nil
	}()
	if _, err := fmt.Fprintln(out, "ready"); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		select {
		case err := <-done:
			return err
		default:
		}
		if _, err := fmt.Fprintln(out, sent.Load()); err != nil {
			return err
		}
	}
	stop.Store(true)
	return <-done
}

// fwdFrames is one batch of the benchmark's frames: 64-byte UDP frames
// (60 bytes + FCS) from src to dst with 64 distinct UDP source ports.
func fwdFrames(dst, src net.HardwareAddr) [][]byte {
	frames := make([][]byte, 64)
	for i := range frames {
		fr := udpFrame64(i)
		copy(fr[0:6], dst)
		copy(fr[6:12], src)
		frames[i] = fr
	}
	return frames
}

// fwdSender is the sender process of BenchmarkForwardVeth: this test
// binary again, running runFwdSender in namespace S.
type fwdSender struct {
	pid int
	in  io.WriteCloser
	out *bufio.Scanner
}

// startFwdSender starts the sender process on S's veth end, sending to
// R's MAC address, and waits until it sends. It is killed when the test
// ends.
func (f *fwdTopo) startFwdSender(t testing.TB) *fwdSender {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("the test binary, to start the sender: %v", err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s,%s", fwdSenderEnv, f.sv.Name, f.rMAC, f.s.MAC(t, f.sv.Name)))
	cmd.Stderr = os.Stderr
	in, err1 := cmd.StdinPipe()
	out, err2 := cmd.StdoutPipe()
	if err := errors.Join(err1, err2); err != nil {
		t.Fatalf("sender pipes: %v", err)
	}
	f.s.Start(t, cmd)
	s := &fwdSender{pid: cmd.Process.Pid, in: in, out: bufio.NewScanner(out)}
	if !s.out.Scan() || s.out.Text() != "ready" {
		t.Fatalf("sender process %d in namespace %s did not start: %q %v", s.pid, f.s, s.out.Text(), s.out.Err())
	}
	return s
}

// sent returns how many frames the sender has sent so far.
func (s *fwdSender) sent(t testing.TB) uint64 {
	t.Helper()
	if _, err := io.WriteString(s.in, "\n"); err != nil {
		t.Fatalf("asking the sender (pid %d) for its count: %v", s.pid, err)
	}
	if !s.out.Scan() {
		t.Fatalf("the sender (pid %d) ended: %v (its error is on stderr)", s.pid, s.out.Err())
	}
	n, err := strconv.ParseUint(s.out.Text(), 10, 64)
	if err != nil {
		t.Fatalf("the sender (pid %d) answered %q, not a count", s.pid, s.out.Text())
	}
	return n
}

// stop ends the sender and reports its error, if any.
func (s *fwdSender) stop(t testing.TB) {
	t.Helper()
	if err := s.in.Close(); err != nil {
		t.Errorf("closing the sender's input: %v", err)
	}
}
