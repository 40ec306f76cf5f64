package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ovsdp/ovsdp/cmd/upcalld/statusaddr"
	"github.com/ovsdp/ovsdp/odp"
)

// Upcall taps: status-socket clients that wrote
// statusaddr.SubscribeUpcalls receive a copy of every upcall the handlers
// read (dpctl monitor), so that a tool can watch a datapath whose upcall
// sockets upcalld owns without taking them over. With no subscriber the
// handlers pay one atomic load per batch.

// tapQueue is how many upcalls a slow subscriber may be behind before
// the next ones are dropped (and counted in its stream).
const tapQueue = 1024

// maxTaps limits the subscribers at once.
const maxTaps = 16

// tapSet is the daemon's subscribers.
type tapSet struct {
	n    atomic.Int32 // len(subs), read without the lock
	seq  atomic.Uint64
	mu   sync.Mutex
	subs map[*tap]struct{}
	// rxOnce starts the receiver of a daemon without handlers (see
	// monitorReceiver).
	rxOnce sync.Once
}

// tap is one subscriber.
type tap struct {
	ch      chan statusaddr.Upcall
	dropped atomic.Uint64
}

// publish copies ups to every subscriber, dropping for those whose queue
// is full.
func (s *tapSet) publish(ups []odp.Upcall) {
	now := time.Now().UnixNano()
	for i := range ups {
		ev := upcallEvent(&ups[i], now)
		s.publishEvent(&ev)
	}
}

// publishEvent numbers ev and queues it for every subscriber; it returns
// how many subscribers' queues were full (they count it as dropped).
func (s *tapSet) publishEvent(ev *statusaddr.Upcall) (full int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev.Seq = s.seq.Add(1)
	for t := range s.subs {
		select {
		case t.ch <- *ev:
		default:
			t.dropped.Add(1)
			full++
		}
	}
	return full
}

func (s *tapSet) add() *tap {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.subs) >= maxTaps {
		return nil
	}
	if s.subs == nil {
		s.subs = map[*tap]struct{}{}
	}
	t := &tap{ch: make(chan statusaddr.Upcall, tapQueue)}
	s.subs[t] = struct{}{}
	s.n.Store(int32(len(s.subs)))
	return t
}

func (s *tapSet) remove(t *tap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.subs, t)
	s.n.Store(int32(len(s.subs)))
}

// afterStatus handles a status connection once its status is written:
// a client that wrote statusaddr.SubscribeUpcalls gets the upcall stream,
// one that wrote statusaddr.SubscribePacketIns the packet-in stream
// (packetin.go), until it closes or ctx ends; any other is closed (a status client
// closes after reading, or writes nothing within the deadline).
func (d *Daemon) afterStatus(ctx context.Context, c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(io.LimitReader(c, 64)).ReadString('\n')
	if err != nil {
		return
	}
	var set *tapSet
	switch strings.TrimSpace(line) {
	case statusaddr.SubscribeUpcalls:
		set = &d.taps
	case statusaddr.SubscribePacketIns:
		set = &d.pins.subs
	default:
		return
	}
	d.monitorReceiver(ctx)
	t := set.add()
	if t == nil {
		json.NewEncoder(c).Encode(map[string]string{"error": "too many subscribers"})
		return
	}
	defer set.remove(t)
	c.SetReadDeadline(time.Time{})
	gone := make(chan struct{})
	go func() { // the client closing ends the stream
		io.Copy(io.Discard, c)
		close(gone)
	}()
	enc := json.NewEncoder(c)
	for {
		select {
		case <-ctx.Done():
			return
		case <-gone:
			return
		case ev := <-t.ch:
			ev.Dropped = t.dropped.Swap(0)
			c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if enc.Encode(&ev) != nil {
				return
			}
		}
	}
}

// monitorReceiver gives a daemon that only hosts a userspace datapath
// (Config.NoHandlers, as dpctl add-dp starts it) one upcall receiver once
// somebody subscribes, whose upcalls only go to the subscribers: misses
// are lost as before, but they can be watched, and the upcalls of
// userspace actions go to the packet-in subscribers.
func (d *Daemon) monitorReceiver(ctx context.Context) {
	if !d.cfg.NoHandlers || d.dp.Type() != "netdev" {
		return
	}
	d.taps.rxOnce.Do(func() {
		rxs, err := d.dp.Upcalls(ctx, 1)
		if err != nil || len(rxs) == 0 {
			d.log.Warn("upcall subscription: no receiver", "err", err)
			return
		}
		go func() {
			defer rxs[0].Close()
			ups := make([]odp.Upcall, 64)
			for {
				n, err := rxs[0].Recv(ctx, ups)
				if err != nil && ctx.Err() != nil {
					return
				}
				if n > 0 && d.taps.n.Load() > 0 {
					d.taps.publish(ups[:n])
				}
				for i := range ups[:n] {
					if ups[i].Kind == odp.UpcallAction {
						d.packetIn(&ups[i])
					}
				}
				clear(ups[:n])
				if err != nil && n == 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
		}()
	})
}
