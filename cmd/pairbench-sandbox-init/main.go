// Command pairbench-sandbox-init is the init of pairbench's sandboxes
// (internal/sandboxinit) as a small program of its own. pairbench starts it
// inside every sandbox, ahead of the sandboxed command, when it is
// installed beside pairbench from the same build (make build and the
// Action do that); without it pairbench's own binary serves, with the
// start-up cost of every package it links. It is not meant to be run by
// hand. Build it without cgo (CGO_ENABLED=0), so that it starts without
// the dynamic loader.
package main

import (
	"fmt"
	"os"

	"github.com/pairbench/pairbench/internal/sandboxinit"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == sandboxinit.ProtocolArg {
		fmt.Println(sandboxinit.Protocol())
		return
	}
	if len(os.Args) < 2 || os.Args[1] != sandboxinit.Arg {
		fmt.Fprintf(os.Stderr, "%s is the init pairbench starts inside its sandboxes; it is not run by hand\n", sandboxinit.Program)
		os.Exit(2)
	}
	os.Exit(sandboxinit.Run(os.Args[2:]))
}
