package main

import "os"

// notifyResize does nothing on Windows, whose consoles send no signal on a
// resize: the HUD takes the size again each time it redraws.
func notifyResize(chan os.Signal) {}
