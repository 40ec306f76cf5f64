// Command upcalld is the upcall handler daemon: it drives a kernel
// (system@NAME) or userspace (netdev@NAME) datapath, handles its misses
// with a learning switch or a rules file, installs megaflows and keeps
// them right. Run "upcalld --help" for the flags; the logic lives in
// internal/app and internal/daemon.
package main

import (
	"os"

	"github.com/ovsdp/ovsdp/cmd/upcalld/internal/app"
)

func main() {
	os.Exit(app.Main(os.Args, os.Stdout, os.Stderr))
}
