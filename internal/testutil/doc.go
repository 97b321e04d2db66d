// Package testutil holds small helpers shared by the tests of several
// packages. Nothing outside tests imports it.
package testutil
