package vm

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// helperEnv makes the test binary act as the program run in the VM by the
// runner tests (the same situation as go test -exec: a binary in the host's
// temporary directory).
const helperEnv = "OVSDP_VM_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

func helper(mode string) int {
	switch mode {
	case "echo":
		wd, _ := os.Getwd()
		fmt.Printf("args=%q\n", os.Args[1:])
		fmt.Printf("wd=%s\n", wd)
		fmt.Printf("marker=%s guest=%s\n", os.Getenv("OVSDP_TEST_MARKER"), os.Getenv(EnvGuest))
		// Prove the working directory is writable and shared with the host.
		if err := os.WriteFile("from-guest.txt", []byte("written in the guest\n"), 0o644); err != nil {
			fmt.Printf("write error: %v\n", err)
		}
		// /tmp and /run must be writable.
		for _, d := range []string{"/tmp", "/run", "/var/run/netns"} {
			if f, err := os.CreateTemp(d, "w"); err != nil {
				fmt.Printf("not writable: %s: %v\n", d, err)
			} else {
				f.Close()
				os.Remove(f.Name())
			}
		}
		if _, err := os.Stat("/sys/module/openvswitch"); err != nil {
			fmt.Printf("no openvswitch module: %v\n", err)
		}
		// A large output, to check that nothing is lost at the end.
		line := strings.Repeat("x", 99) + "\n"
		for i := 0; i < 20000; i++ {
			os.Stdout.WriteString(line)
		}
		fmt.Println("last stdout line")
		fmt.Fprintln(os.Stderr, "a line on stderr")
		return 7
	case "sleep":
		select {}
	case "crash":
		fmt.Println("crashing the guest kernel")
		os.Stdout.Sync()
		if err := os.WriteFile("/proc/sysrq-trigger", []byte("c"), 0); err != nil {
			fmt.Fprintf(os.Stderr, "sysrq: %v\n", err)
		}
		select {}
	}
	fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
	return 99
}
