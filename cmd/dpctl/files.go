package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ovsdp/ovsdp/internal/linereader"
	"github.com/ovsdp/ovsdp/odp"
)

// fileCmd is what a line of a flows file does by default.
type fileCmd int

const (
	fileAdd fileCmd = iota
	fileMod
	fileDel
)

// parseFlowLine splits a flows-file line as ovs-dpctl does: an optional
// leading "add", "modify" or "delete", then the flow (up to the first
// blank) and the actions (the rest).
func parseFlowLine(def fileCmd, line string) (cmd fileCmd, flow, actions string) {
	cmd = def
	line = strings.TrimLeft(line, " \t\r\n")
	word := line
	if i := strings.IndexAny(line, ", \t\r\n"); i >= 0 {
		word = line[:i]
	}
	switch {
	case word != "" && strings.HasPrefix("add", word):
		cmd, line = fileAdd, line[len(word):]
	case word != "" && strings.HasPrefix("delete", word):
		cmd, line = fileDel, line[len(word):]
	case word != "" && strings.HasPrefix("modify", word):
		cmd, line = fileMod, line[len(word):]
	}
	line = strings.TrimLeft(line, " \t\r\n")
	flow = line
	if i := strings.IndexAny(line, " \t\r\n"); i >= 0 {
		flow, actions = line[:i], strings.TrimSpace(line[i:])
	}
	return cmd, flow, actions
}

// cmdFlowsFile implements add-flows, mod-flows and del-flows FILE: every
// line of FILE (- for standard input) is a flow, read and sent one at a
// time so that files of any size stream. A bad line is reported with its
// number and skipped, as ovs-dpctl does; the exit status is non-zero if
// any line failed.
func cmdFlowsFile(def fileCmd) func(e *env, args []string) error {
	return func(e *env, args []string) error {
		if len(args) < 1 {
			return fmt.Errorf("wrong number of arguments: a FILE is needed")
		}
		file := args[len(args)-1]
		dp, rest, err := optDP(e.ctx, args[:len(args)-1], 1)
		if err != nil {
			return err
		}
		defer dp.Close()
		if len(rest) != 0 {
			return fmt.Errorf("unexpected argument %q", rest[0])
		}
		var (
			r  io.Reader
			fh *os.File
		)
		if file == "-" {
			r = e.c.App.Reader
		} else {
			fh, err = os.Open(file)
			if err != nil {
				return fmt.Errorf("opening file %q failed: %w", file, err)
			}
			defer fh.Close()
			r = fh
		}
		prog := newProgress(e.c.App.ErrWriter, fh)
		lr := newLineReader(r, maxFlowLine)
		failed := 0
		report := func(n int, err error) {
			failed++
			reportError(e.c.App.ErrWriter, fmt.Errorf("%s:%d: %w", file, n, err))
		}
		prog.failed = &failed
		// Consecutive adds (or modifies) go to a datapath that can batch
		// them in batches of flowBatchSize requests per system call.
		batcher, _ := dp.(flowBatcher)
		var batch pendingPuts
		flush := func() {
			if len(batch.flows) == 0 {
				return
			}
			errs, err := batcher.PutFlows(e.ctx, batch.flows, batch.flags)
			for i, n := range batch.lines {
				switch {
				case err != nil && (errs == nil || errs[i] == nil):
					report(n, fmt.Errorf("updating flow table: %w", err))
				case errs != nil && errs[i] != nil:
					report(n, fmt.Errorf("updating flow table: %w", explainPut(batch.flows[i], errs[i])))
				}
			}
			batch = pendingPuts{}
		}
		// Consecutive deletes likewise, without asking for statistics
		// (del-flows FILE prints none).
		deleter, _ := dp.(flowDeleter)
		var dels pendingDels
		flushDels := func() {
			if len(dels.ids) == 0 {
				return
			}
			errs, err := deleter.DelFlows(e.ctx, dels.ids)
			for i, n := range dels.lines {
				var derr error
				switch {
				case errs != nil && errs[i] != nil:
					derr = errs[i]
				case err != nil:
					derr = err
				default:
					continue
				}
				derr = fmt.Errorf("deleting flow: %w", derr)
				if errors.Is(derr, os.ErrNotExist) && dels.ids[i].UFID.IsZero() {
					derr = fmt.Errorf("%w (perhaps you need to specify a UFID?)", derr)
				}
				report(n, derr)
			}
			dels = pendingDels{}
		}
		var readErr error
		for n := 1; ; n++ {
			line, skipped, err := lr.next()
			if err != nil {
				if err != io.EOF {
					readErr = err
				}
				break
			}
			prog.add(len(line) + 1 + skipped)
			if skipped > 0 {
				report(n, fmt.Errorf("line longer than %s, skipped", maxFlowLineText))
				continue
			}
			t := strings.TrimSpace(line)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			cmd, flow, acts := parseFlowLine(def, line)
			flags := odp.PutCreate
			if cmd == fileMod {
				flags = odp.PutModify
			}
			switch {
			case flow == "" || (cmd != fileDel && acts == "") || (cmd == fileDel && acts != ""):
				err = fmt.Errorf("failed parsing line number %d, skipped", n)
			case cmd != fileDel && batcher != nil:
				flushDels()
				var f *odp.Flow
				if f, err = buildFlow(e, dp, flow, acts); err == nil {
					if len(batch.flows) > 0 && batch.flags != flags {
						flush()
					}
					batch.add(f, flags, n)
					if len(batch.flows) >= flowBatchSize {
						flush()
					}
				}
			case cmd != fileDel:
				flushDels()
				_, err = putFlow(e, dp, flow, acts, flags)
			case deleter != nil:
				flush()
				var id odp.FlowID
				if id.UFID, id.Key, _, err = parseFlowArg(flow, portNumbers(e, dp)); err == nil {
					dels.ids = append(dels.ids, id)
					dels.lines = append(dels.lines, n)
					if len(dels.ids) >= flowBatchSize {
						flushDels()
					}
				}
			default:
				flush()
				_, err = delFlow(e, dp, flow)
			}
			if err != nil {
				report(n, err)
			}
		}
		flush()
		flushDels()
		prog.finish()
		if readErr != nil {
			return fmt.Errorf("reading %s: %w", file, readErr)
		}
		if failed > 0 {
			return fmt.Errorf("%d of the lines of %s failed", failed, file)
		}
		return nil
	}
}

// maxFlowLine bounds a line of a flows file; a longer one is reported
// and skipped, and the next line read.
const (
	maxFlowLine     = 1 << 20
	maxFlowLineText = "1 MiB"
)

// lineReader reads lines of at most max bytes, skipping the rest of a
// longer one (internal/linereader).
type lineReader struct{ r *linereader.Reader }

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{linereader.New(r, max)}
}

// next returns the next line without its newline; skipped > 0 when the
// line was longer than max (then line is empty, and skipped its length).
// The last line may lack a newline. It returns io.EOF at the end.
func (l *lineReader) next() (line string, skipped int, err error) {
	b, n, long, err := l.r.Next()
	switch {
	case err != nil:
		return "", 0, err
	case long:
		return "", n, nil
	}
	return string(b), 0, nil
}

// portMaps returns dp's port names by number and numbers by name, read
// once per command.
func portMaps(e *env, dp odp.Datapath) (map[uint32]string, map[string]uint32) {
	if e.portName == nil {
		e.portName, e.portNum = map[uint32]string{}, map[string]uint32{}
		if ports, err := dp.Ports(e.ctx); err == nil {
			for _, p := range ports {
				e.portName[p.Number] = p.Name
				e.portNum[p.Name] = p.Number
			}
		}
	}
	return e.portName, e.portNum
}

// formatOptions are the flow text options of this command: verbose with
// -m, port names with --names or -m (unless --no-names), as ovs-dpctl.
func formatOptions(e *env, dp odp.Datapath) odp.FormatOptions {
	opts := odp.FormatOptions{Verbose: e.c.Bool("more")}
	if e.c.Bool("names") || (opts.Verbose && !e.c.Bool("no-names")) {
		names, _ := portMaps(e, dp)
		opts.PortName = func(n uint32) (string, bool) {
			s, ok := names[n]
			return s, ok
		}
	}
	return opts
}

// portNumbers resolves port names in flows given on the command line.
func portNumbers(e *env, dp odp.Datapath) func(string) (uint32, bool) {
	return func(name string) (uint32, bool) {
		_, nums := portMaps(e, dp)
		n, ok := nums[name]
		return n, ok
	}
}

// flowBatchSize is how many flow requests a batch holds.
const flowBatchSize = 50

// flowBatcher is implemented by datapaths that can put many flows per
// system call (the kernel's: genl.Datapath.PutFlows).
type flowBatcher interface {
	// PutFlows puts flows with flags; errs[i] is flows[i]'s error, err a
	// failure of the whole batch.
	PutFlows(ctx context.Context, flows []*odp.Flow, flags odp.PutFlags) (errs []error, err error)
}

// pendingPuts is a batch of flows waiting to be sent, with the line
// number each came from.
type pendingPuts struct {
	flows []*odp.Flow
	lines []int
	flags odp.PutFlags
}

func (p *pendingPuts) add(f *odp.Flow, flags odp.PutFlags, line int) {
	p.flows = append(p.flows, f)
	p.lines = append(p.lines, line)
	p.flags = flags
}

// flowDeleter is implemented by datapaths that can delete many flows per
// system call (the kernel's: genl.Datapath.DelFlows).
type flowDeleter interface {
	// DelFlows deletes flows; errs[i] is ids[i]'s error, err a failure
	// of the whole batch.
	DelFlows(ctx context.Context, ids []odp.FlowID) (errs []error, err error)
}

// pendingDels is a batch of flows waiting to be deleted, with the line
// number each came from.
type pendingDels struct {
	ids   []odp.FlowID
	lines []int
}
