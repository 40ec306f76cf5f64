package genl

import (
	"context"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
)

// debugLog is the logger of the netlink exchange set by SetDebugLogger;
// nil (the default) logs nothing and costs one atomic load per message.
var debugLog atomic.Pointer[slog.Logger]

// SetDebugLogger makes every Client and Datapath log, at debug level on
// l, each generic netlink request it sends and each reply it receives
// (operation, family, command, flags, sequence number, length and the
// payload in hex). A nil l turns the logging off. It is what dpctl's
// --verbose uses.
func SetDebugLogger(l *slog.Logger) { debugLog.Store(l) }

// debugMessage logs one message of the exchange when a debug logger is
// set and enabled for debug records.
func debugMessage(dir, op string, family uint16, cmd uint8, flags uint16, seq uint32, payload []byte) {
	l := debugLog.Load()
	if l == nil || !l.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	const maxHex = 512 // bytes of payload shown
	p := payload
	truncated := false
	if len(p) > maxHex {
		p, truncated = p[:maxHex], true
	}
	l.LogAttrs(context.Background(), slog.LevelDebug, "netlink "+dir,
		slog.String("op", op),
		slog.Uint64("family", uint64(family)),
		slog.Uint64("cmd", uint64(cmd)),
		slog.String("flags", "0x"+hex.EncodeToString([]byte{byte(flags >> 8), byte(flags)})),
		slog.Uint64("seq", uint64(seq)),
		slog.Int("len", len(payload)),
		slog.String("data", hex.EncodeToString(p)),
		slog.Bool("truncated", truncated))
}

// replyCmd is the generic netlink command of a message's payload (0 when
// it is too short to have one).
func replyCmd(data []byte) uint8 {
	if len(data) < 1 {
		return 0
	}
	return data[0]
}
