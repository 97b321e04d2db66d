package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// parseSubcommand parses the flags of `mcpvisor NAME`, which takes no
// other arguments. On --help it prints usage to stdout; on a mistake it
// prints the error and usage to stderr. ok false means: return code.
func parseSubcommand(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) (code int, ok bool) {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return 0, false
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor %s: %v\n\n%s", fs.Name(), err, usage)
		return 2, false
	}
	return 0, true
}
