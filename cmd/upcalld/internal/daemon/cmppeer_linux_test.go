//go:build integration

package daemon

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cmpPeerEnv selects the test binary's traffic-peer mode: set (to "1"),
// TestMain runs cmpPeerMain instead of the tests. The vs-OVS
// benchmarks start the binary again in that mode so that the sender and
// the sink are a process of their own, for upcalld and ovs-vswitchd
// alike: upcalld's process then holds only upcalld (its collector pays
// for no sender garbage, nor the sender for its), and both switches see
// the same sender.
const cmpPeerEnv = "OVSDP_CMP_PEER"

func TestMain(m *testing.M) {
	if os.Getenv(cmpPeerEnv) == "1" {
		if err := cmpPeerMain(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "traffic peer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// cmpPeerResult is what the traffic peer measured, in durations since
// its first frame was sent.
type cmpPeerResult struct {
	// sent is when each frame was sent; arrived when it reached the
	// sink (-1: never).
	sent, arrived []time.Duration
	// sentEnd is when the last frame had been sent.
	sentEnd  time.Duration
	sendErrs int
}

// The peer's file descriptors (ExtraFiles): the sender's AF_PACKET
// socket and the sink's.
const (
	cmpPeerSenderFD = 3
	cmpPeerSinkFD   = 4
)

// cmpBurst is how many frames the sender sends back to back.
const cmpBurst = 16

// runCmpPeer sends frames from the AF_PACKET socket sender (to the
// device ifindex) at rate frames a second in bursts of cmpBurst, and
// watches the sink socket for their arrival, in a child process: this
// test binary in peer mode, handed duplicates of both sockets.
func runCmpPeer(sender, ifindex, sink, rate int, frames [][]byte) (*cmpPeerResult, error) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, fd := range []int{sender, sink} {
		d, err := unix.Dup(fd)
		if err != nil {
			return nil, fmt.Errorf("duplicating socket %d: %w", fd, err)
		}
		files = append(files, os.NewFile(uintptr(d), "socket"))
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), cmpPeerEnv+"=1",
		"OVSDP_CMP_PEER_IFINDEX="+strconv.Itoa(ifindex), "OVSDP_CMP_PEER_RATE="+strconv.Itoa(rate))
	cmd.ExtraFiles = files
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", exe, err)
	}
	werr := writeCmpFrames(in, frames)
	in.Close()
	res, rerr := readCmpResult(bufio.NewReader(out), len(frames))
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("%s in peer mode: %w", exe, err)
	}
	if werr != nil {
		return nil, fmt.Errorf("handing the frames to the peer: %w", werr)
	}
	if rerr != nil {
		return nil, fmt.Errorf("reading the peer's result: %w", rerr)
	}
	return res, nil
}

func writeCmpFrames(w io.Writer, frames [][]byte) error {
	bw := bufio.NewWriter(w)
	binary.Write(bw, binary.BigEndian, uint32(len(frames)))
	for _, f := range frames {
		binary.Write(bw, binary.BigEndian, uint16(len(f)))
		bw.Write(f)
	}
	return bw.Flush()
}

func readCmpFrames(r io.Reader) ([][]byte, error) {
	var n uint32
	if err := binary.Read(r, binary.BigEndian, &n); err != nil {
		return nil, err
	}
	if n > 1<<24 {
		return nil, fmt.Errorf("%d frames", n)
	}
	frames := make([][]byte, n)
	for i := range frames {
		var l uint16
		if err := binary.Read(r, binary.BigEndian, &l); err != nil {
			return nil, err
		}
		frames[i] = make([]byte, l)
		if _, err := io.ReadFull(r, frames[i]); err != nil {
			return nil, err
		}
	}
	return frames, nil
}

func readCmpResult(r io.Reader, n int) (*cmpPeerResult, error) {
	var hdr struct{ SendErrs, SentEnd int64 }
	if err := binary.Read(r, binary.BigEndian, &hdr); err != nil {
		return nil, err
	}
	times := make([]int64, 2*n)
	if err := binary.Read(r, binary.BigEndian, times); err != nil {
		return nil, err
	}
	res := &cmpPeerResult{sent: make([]time.Duration, n), arrived: make([]time.Duration, n),
		sentEnd: time.Duration(hdr.SentEnd), sendErrs: int(hdr.SendErrs)}
	for i := range n {
		res.sent[i], res.arrived[i] = time.Duration(times[2*i]), time.Duration(times[2*i+1])
	}
	return res, nil
}

// cmpPeerMain is the traffic peer: it reads the frames from in, sends
// them, waits for the stragglers (until all arrived, or none did for
// 2 s), and writes its measurements to out.
func cmpPeerMain(in io.Reader, out io.Writer) error {
	ifindex, err := strconv.Atoi(os.Getenv("OVSDP_CMP_PEER_IFINDEX"))
	if err != nil {
		return fmt.Errorf("OVSDP_CMP_PEER_IFINDEX: %w", err)
	}
	rate, err := strconv.Atoi(os.Getenv("OVSDP_CMP_PEER_RATE"))
	if err != nil || rate <= 0 {
		return fmt.Errorf("OVSDP_CMP_PEER_RATE %q: not a positive rate", os.Getenv("OVSDP_CMP_PEER_RATE"))
	}
	frames, err := readCmpFrames(bufio.NewReader(in))
	if err != nil {
		return fmt.Errorf("reading the frames: %w", err)
	}
	flows := len(frames)
	sa := &unix.SockaddrLinklayer{Ifindex: ifindex, Protocol: 0x0008, Halen: 6}
	arrived := make([]time.Time, flows)
	var mu sync.Mutex
	delivered := 0
	var stop atomic.Bool
	done := make(chan struct{})
	go func() { // the sink: when each new flow's first frame arrived
		defer close(done)
		buf := make([]byte, 2048)
		for !stop.Load() {
			nr, err := unix.Read(cmpPeerSinkFD, buf)
			now := time.Now()
			// The sink's own frames carry no mark.
			if err != nil || nr < 50 || binary.BigEndian.Uint32(buf[42:]) != 0x0cf0cf0c {
				continue
			}
			i := int(binary.BigEndian.Uint32(buf[46:]))
			mu.Lock()
			if i < len(arrived) && arrived[i].IsZero() {
				arrived[i] = now
				delivered++
			}
			mu.Unlock()
		}
	}()
	sent := make([]time.Time, flows)
	gap := time.Duration(float64(time.Second) * cmpBurst / float64(rate))
	sendErrs := 0
	t0 := time.Now()
	for i := 0; i < flows; {
		due := t0.Add(time.Duration(i/cmpBurst) * gap)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		now := time.Now()
		for end := min(i+cmpBurst, flows); i < end; i++ {
			sent[i] = now
			if err := unix.Sendto(cmpPeerSenderFD, frames[i], 0, sa); err != nil {
				sendErrs++
			}
		}
	}
	sentEnd := time.Now()
	last, lastN := time.Now(), -1
	for time.Since(last) < 2*time.Second {
		mu.Lock()
		d := delivered
		mu.Unlock()
		if d == flows {
			break
		}
		if d != lastN {
			last, lastN = time.Now(), d
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop.Store(true)
	<-done
	bw := bufio.NewWriter(out)
	binary.Write(bw, binary.BigEndian, [2]int64{int64(sendErrs), int64(sentEnd.Sub(t0))})
	times := make([]int64, 2*flows)
	for i := range flows {
		times[2*i] = int64(sent[i].Sub(t0))
		times[2*i+1] = -1
		if !arrived[i].IsZero() {
			times[2*i+1] = int64(arrived[i].Sub(t0))
		}
	}
	if err := binary.Write(bw, binary.BigEndian, times); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return errors.Join(errors.New("writing the result"), err)
	}
	return nil
}
