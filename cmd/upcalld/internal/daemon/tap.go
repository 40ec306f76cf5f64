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
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range ups {
		up := &ups[i]
		key, err := odp.MarshalKey(up.Key)
		if err != nil {
			key = nil
		}
		ev := statusaddr.Upcall{Seq: s.seq.Add(1), Kind: uint8(up.Kind), Port: up.Port, Key: key,
			Packet: append([]byte(nil), up.Packet...), Userdata: append([]byte(nil), up.Userdata...), TimeNS: now}
		for t := range s.subs {
			select {
			case t.ch <- ev:
			default:
				t.dropped.Add(1)
			}
		}
	}
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
// a client that wrote statusaddr.SubscribeUpcalls gets the upcall stream
// until it closes or ctx ends; any other is closed (a status client
// closes after reading, or writes nothing within the deadline).
func (d *Daemon) afterStatus(ctx context.Context, c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(io.LimitReader(c, 64)).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != statusaddr.SubscribeUpcalls {
		return
	}
	d.monitorReceiver(ctx)
	t := d.taps.add()
	if t == nil {
		json.NewEncoder(c).Encode(map[string]string{"error": "too many upcall subscribers"})
		return
	}
	defer d.taps.remove(t)
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
// are lost as before, but they can be watched.
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
