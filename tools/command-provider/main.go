// Command pulumi-resource-command is narwhal-fleet's own build of the Pulumi
// "command" resource provider: it serves the resources of @pulumi/command
// 1.2.1 that the program uses (command:remote:Command, command:local:Command,
// command:remote:CopyToRemote, and the command:local:run invoke) with the same
// type tokens, inputs, outputs and semantics, so the TypeScript program is the
// one a user with the upstream plugin would run.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// version is reported to the engine; the build sets it with
// -ldflags "-X main.version=1.2.1".
var version = "1.2.1"

// The engine passes its own logging flags to plugins when run with --logflow;
// declare them so flag parsing accepts them (the SDK's logger reads them).
func init() {
	if flag.Lookup("logtostderr") == nil {
		flag.Bool("logtostderr", false, "log to stderr instead of to files")
	}
	if flag.Lookup("v") == nil {
		flag.Int("v", 0, "log verbosity")
	}
	if flag.Lookup("logflow") == nil {
		flag.Bool("logflow", false, "flow log settings to child processes")
	}
}

func main() {
	err := provider.Main("command", func(host *provider.HostClient) (pulumirpc.ResourceProviderServer, error) {
		return newProvider(host, version), nil
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-resource-command: %v\n", err)
		os.Exit(1)
	}
}
