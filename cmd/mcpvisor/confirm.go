package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// errNeedsYes is returned when a change needs the person's yes and there is
// nobody to ask: stdin is not a terminal and --yes was not given.
var errNeedsYes = errors.New("this changes a file: confirm at a terminal, or rerun with --yes")

// confirmer asks the yes/no questions of init, connect and disconnect.
// With yes set every question takes its default answer without being
// asked; without a terminal to ask at, a question whose default is no
// cannot be answered and one whose default is yes is refused with
// errNeedsYes too, so nothing is changed that nobody agreed to.
type confirmer struct {
	in          *bufio.Reader
	out         io.Writer
	yes         bool
	interactive bool
}

// ask puts question and reads y or n; an empty answer is def.
func (c *confirmer) ask(question string, def bool) (bool, error) {
	if c.yes {
		return def, nil
	}
	if !c.interactive {
		return false, errNeedsYes
	}
	hint := " [y/N] "
	if def {
		hint = " [Y/n] "
	}
	for {
		fmt.Fprint(c.out, question+hint)
		line, err := c.in.ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "":
			if err != nil {
				return false, fmt.Errorf("no answer: %w", err)
			}
			return def, nil
		case "y", "yes":
			return true, nil
		case "n", "no":
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("no answer: %w", err)
		}
		fmt.Fprintln(c.out, "Please answer y or n.")
	}
}
