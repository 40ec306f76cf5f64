package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/odp"
)

func parseKeysCommand() *cli.Command {
	return &cli.Command{
		Name:  "parse-keys",
		Usage: "round-trip exact flow keys read from standard input, one per line",
		Description: "Each line is parsed, encoded to netlink attributes, decoded back and\n" +
			"printed in canonical form. Blank lines and lines starting with # are echoed.",
		Action: func(c *cli.Context) error {
			return roundTripLines(c, roundTripKey)
		},
	}
}

func parseWcKeysCommand() *cli.Command {
	return &cli.Command{
		Name:  "parse-wc-keys",
		Usage: "round-trip flow keys with masks read from standard input, one per line",
		Action: func(c *cli.Context) error {
			return roundTripLines(c, roundTripMaskedKey)
		},
	}
}

func parseActionsCommand() *cli.Command {
	return &cli.Command{
		Name:      "parse-actions",
		Usage:     "round-trip datapath action lists given as arguments (as ovs-dpctl), or read from standard input, one a line",
		ArgsUsage: "[ACTIONS...]",
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return roundTripArgs(c, roundTripActions)
			}
			return roundTripLines(c, roundTripActions)
		},
	}
}

// roundTripResult is the JSON form of one line of the round-trip
// commands.
type roundTripResult struct {
	Line   int    `json:"line"`
	Input  string `json:"input"`
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// roundTripLines applies fn to every line of the standard input and
// prints the result, or an error naming the line. Blank lines and
// comments are echoed (left out of the JSON form). It returns an exit
// error if any line failed.
func roundTripLines(c *cli.Context, fn func(string) (string, error)) error {
	e, err := newEnv(c)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(e.out)
	defer w.Flush()
	var results []roundTripResult
	sc := bufio.NewScanner(c.App.Reader)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	failed := 0
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			if !e.json {
				fmt.Fprintln(w, line)
			}
			continue
		}
		out, err := fn(trimmed)
		r := roundTripResult{Line: n, Input: trimmed, Output: out}
		if err != nil {
			failed++
			r.Output, r.Error = "", err.Error()
		}
		switch {
		case e.json:
			results = append(results, r)
		case err != nil:
			fmt.Fprintf(w, "line %d: error: %v\n", n, err)
		default:
			fmt.Fprintln(w, out)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading input: %w", err)
	}
	if e.json {
		if results == nil {
			results = []roundTripResult{}
		}
		w.Flush()
		if err := e.printJSON(results); err != nil {
			return err
		}
	}
	if failed > 0 {
		return cli.Exit(fmt.Sprintf("%d line(s) failed to parse", failed), 1)
	}
	return nil
}

// roundTripKey parses an exact key, encodes and decodes it, and formats
// it as ovs-dpctl formats keys without masks.
func roundTripKey(s string) (string, error) { return odp.RoundTripKey(s, false) }

// roundTripMaskedKey parses a key with masks, encodes and decodes both,
// and formats them as ovs-dpctl dump-flows does.
func roundTripMaskedKey(s string) (string, error) { return odp.RoundTripKey(s, true) }

// roundTripActions parses an action list, encodes and decodes it, and
// formats it.
func roundTripActions(s string) (string, error) { return odp.RoundTripActions(s) }

// roundTripArgs applies fn to every argument and prints the results, one
// a line, stopping at the first that fails, as ovs-dpctl's parse-actions
// does.
func roundTripArgs(c *cli.Context, fn func(string) (string, error)) error {
	e, err := newEnv(c)
	if err != nil {
		return err
	}
	var results []roundTripResult
	for i, a := range c.Args().Slice() {
		out, err := fn(a)
		if err != nil {
			if e.json {
				results = append(results, roundTripResult{Line: i + 1, Input: a, Error: err.Error()})
				if perr := e.printJSON(results); perr != nil {
					return perr
				}
			}
			return fmt.Errorf("argument %d %q: %w", i+1, a, err)
		}
		if e.json {
			results = append(results, roundTripResult{Line: i + 1, Input: a, Output: out})
			continue
		}
		if _, err := fmt.Fprintln(e.out, out); err != nil {
			return err
		}
	}
	if e.json {
		return e.printJSON(results)
	}
	return nil
}
