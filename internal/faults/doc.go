// Package faults holds the fault-injection tests of invoiced: the
// real binary is run against PostgreSQL while servers are killed, databases
// stopped, primaries failed over, connections cut, counter locks held and
// clocks turned back, and a recorded history of every client operation is
// checked afterwards against the service's invariants. Everything lives in
// _test.go files; this file only names the package. See docs/faults.md.
package faults
