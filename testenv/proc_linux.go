package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// ProcCPU is the CPU a process has used so far, read two ways: the sum
// of its live threads' run time from /proc/PID/task/*/schedstat
// (nanoseconds, exact; a thread that has exited is no longer counted)
// and the process's user and system time from /proc/PID/stat (ticks of
// 10 ms, including threads that have exited).
type ProcCPU struct {
	// Sched is the threads' summed time on a CPU (schedstat's first
	// field).
	Sched time.Duration
	// Wait is the threads' summed time runnable but waiting for a CPU
	// (schedstat's second field): what other work on the machine took
	// from them.
	Wait time.Duration
	// Slices is how many times the threads were put on a CPU
	// (schedstat's third field): each wake-up from sleep is one, as is
	// each return after preemption.
	Slices uint64
	// User and System are utime and stime of /proc/PID/stat.
	User, System time.Duration
	// Threads is how many threads were summed for Sched.
	Threads int
}

// Sub returns the CPU used between o and c (c minus o).
func (c ProcCPU) Sub(o ProcCPU) ProcCPU {
	return ProcCPU{Sched: c.Sched - o.Sched, Wait: c.Wait - o.Wait, Slices: c.Slices - o.Slices, User: c.User - o.User, System: c.System - o.System, Threads: c.Threads}
}

// ReadProcCPU reads the CPU process pid has used.
func ReadProcCPU(pid int) (ProcCPU, error) {
	var c ProcCPU
	dir := fmt.Sprintf("/proc/%d", pid)
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return c, fmt.Errorf("process %d: %w", pid, err)
	}
	if c.User, c.System, err = parseStatTimes(string(b)); err != nil {
		return c, fmt.Errorf("%s/stat: %w", dir, err)
	}
	tasks, err := os.ReadDir(filepath.Join(dir, "task"))
	if err != nil {
		return c, fmt.Errorf("process %d: %w", pid, err)
	}
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, "task", t.Name(), "schedstat"))
		if os.IsNotExist(err) {
			continue // the thread exited meanwhile
		}
		if err != nil {
			return c, fmt.Errorf("process %d: %w", pid, err)
		}
		ff := strings.Fields(string(b))
		if len(ff) != 3 {
			return c, fmt.Errorf("%s/task/%s/schedstat: %q: want 3 fields", dir, t.Name(), b)
		}
		for k, dst := range []*time.Duration{&c.Sched, &c.Wait} {
			v, err := strconv.ParseUint(ff[k], 10, 64)
			if err != nil {
				return c, fmt.Errorf("%s/task/%s/schedstat: %w", dir, t.Name(), err)
			}
			*dst += time.Duration(v)
		}
		v, err := strconv.ParseUint(ff[2], 10, 64)
		if err != nil {
			return c, fmt.Errorf("%s/task/%s/schedstat: %w", dir, t.Name(), err)
		}
		c.Slices += v
		c.Threads++
	}
	return c, nil
}

// parseStatTimes returns utime and stime (fields 14 and 15) of a
// /proc/PID/stat line.
func parseStatTimes(s string) (user, system time.Duration, err error) {
	// The command name, in parentheses, may hold spaces and ')': the
	// fields after it start after the last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("no ')' after the command name in %q", s)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	var v [2]uint64
	for k := range v {
		if v[k], err = strconv.ParseUint(f[11+k], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("field %d: %w", 14+k, err)
		}
	}
	return time.Duration(v[0]) * time.Second / clockTicks, time.Duration(v[1]) * time.Second / clockTicks, nil
}
